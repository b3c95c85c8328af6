// Who this process is in its job, from the launcher's environment (torchrun/torchelastic,
// Slurm, Open MPI): rank, local rank, world size, job id, restart count.
#pragma once

#include "sink/trace_file.h"

namespace commtrace {

FileIdentity launcherIdentity();

}  // namespace commtrace
