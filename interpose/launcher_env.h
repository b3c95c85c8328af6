// Who this process is in its job, from the launcher's environment (torchrun/torchelastic,
// Slurm, Open MPI): rank, local rank, world size, job id, restart count; and NCCL_HOSTID,
// which decides what NCCL counts as one host when set.
#pragma once

#include "sink/trace_file.h"

namespace commtrace {

FileIdentity launcherIdentity();

}  // namespace commtrace
