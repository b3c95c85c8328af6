// The moment a process is known to drive a GPU: its first NCCL communicator (the plugin's
// init, the ncclCommInit* wrappers) or its first CUDA sync call. The CUPTI face attaches
// then, so the many processes of a job that never touch CUDA (launchers, shells, DataLoader
// workers) never load CUPTI.
#pragma once

namespace commtrace {

// Runs the hook once per process, on the first caller's thread; later calls are one
// relaxed load. Cold paths and the CUDA sync wrappers only (the hook may dlopen).
void noteGpuInUse();

// The library's, from its constructor.
void setGpuInUseHook(void (*hook)());

}  // namespace commtrace
