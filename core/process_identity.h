// Who this process is in its job, from its launcher's environment: torchrun/torchelastic,
// Slurm srun, Open MPI mpirun, PMIx and MPICH/Hydra (PMI) each name the rank, local rank,
// world size and job in variables of their own (kLaunchers). Every face asks here, so the
// plugin's communicator records and the file header agree on the rank under any launcher.
// NCCL's own answer, when the NCCL wrappers saw the world communicator's init, wins.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "core/env_lookup.h"

namespace commtrace {

struct ProcessIdentity {
  int32_t rank = -1;  // -1: no launcher says (a plain process)
  int32_t local_rank = -1;
  int32_t world_size = -1;
  std::string job_id;
  std::string launcher;  // which launcher's variables named the rank ("" when none did)
  uint32_t restart_count = 0;
  std::string nccl_host_id;  // NCCL_HOSTID: NCCL's "same host" key, which can differ from the host name
};

// One launcher's variables (nullptr where it sets none). Earlier entries win when several
// are set: torchrun started by srun has both RANK and SLURM_PROCID, and torchrun's is the
// training rank (Slurm's numbers the torchrun agents).
struct LauncherVariables {
  const char* launcher;
  const char* rank;
  const char* local_rank;
  const char* world_size;
  const char* job_id;
};
std::span<const LauncherVariables> launchers();

// The identity those variables give (COMMTRACE_JOB_ID, then generated_job_id when no
// launcher names the job). Pure: no NCCL answer, for tests and for processIdentity().
ProcessIdentity identityFrom(EnvLookup lookup, const char* generated_job_id);

// This process's identity: identityFrom(getenv) with NCCL's world rank and size when noted,
// and the job id nameJobIfUnnamed() made. Cold path.
ProcessIdentity processIdentity();

// This process's global rank, as processIdentity() has it. Cold path; allocates nothing.
int32_t globalRank();

// The constructor's, once: when no launcher names the job, makes up an id from the time
// and pid, which names this process's file from then on, and returns it for the
// constructor to export as COMMTRACE_JOB_ID (so every process started below this one
// shares it). nullptr when the job is named.
const char* nameJobIfUnnamed();

// What NCCL communicator init taught the preload face: this process's rank and the size
// of the first communicator it joined by ncclCommInitRank*/InitAll (the job's world, for
// torch's default process group). Cold path; the first call wins: true for that call.
bool noteNcclWorldRank(int32_t rank, int32_t n_ranks);

}  // namespace commtrace
