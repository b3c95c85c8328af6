// Who this process is in its job, from the launcher's environment (torchrun/torchelastic,
// Slurm, Open MPI): rank, local rank, world size, job id, restart count; and NCCL_HOSTID,
// which decides what NCCL counts as one host when set.
#pragma once

#include <cstdint>

#include "sink/trace_file.h"

namespace commtrace {

FileIdentity launcherIdentity();

// What NCCL communicator init taught the preload face: this process's rank and the size
// of the first communicator it joined by ncclCommInitRank*/InitAll (the job's world, for
// torch's default process group). Cold path; the first call wins.
void noteNcclWorldRank(int32_t rank, int32_t n_ranks);

}  // namespace commtrace
