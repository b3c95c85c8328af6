// Who this process is in its job, from the launcher's environment (torchrun/torchelastic,
// Slurm, Open MPI): rank, local rank, world size, job id, restart count; and NCCL_HOSTID,
// which decides what NCCL counts as one host when set.
#pragma once

#include <cstdint>

#include "sink/trace_file.h"

namespace commtrace {

FileIdentity launcherIdentity();

// The constructor's, once: when no launcher names the job (TORCHELASTIC_RUN_ID,
// SLURM_JOB_ID, COMMTRACE_JOB_ID all unset), makes up an id from the time and pid, which
// names this process's file from then on, and returns it for the constructor to export as
// COMMTRACE_JOB_ID (so every process started below this one shares it). nullptr when the
// job is named.
const char* nameJobIfUnnamed();

// What NCCL communicator init taught the preload face: this process's rank and the size
// of the first communicator it joined by ncclCommInitRank*/InitAll (the job's world, for
// torch's default process group). Cold path; the first call wins: true for that call.
bool noteNcclWorldRank(int32_t rank, int32_t n_ranks);

// This process's global rank: NCCL's when noted, else the launcher's (RANK, SLURM_PROCID,
// OMPI_COMM_WORLD_RANK, PMI_RANK), else -1. Cold path; reads the environment, allocates nothing.
int32_t globalRank();

}  // namespace commtrace
