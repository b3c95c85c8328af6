// What happens when libcommtrace.so enters and leaves a process, whichever way it came
// (LD_PRELOAD, NCCL's dlopen of its profiler plugin, or a program linking it).
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>

#include <cstdio>
#include <cstring>

#include "interpose/capture_api.h"
#include "ringbuffer/ring_registry.h"

namespace {

// Recording (the flusher thread and the trace file) starts with the process's first
// record, so the many processes of a job that never touch NCCL (shells, compilers,
// launchers) get no thread and no file.
void startRecording() { commtrace_start(nullptr); }

// Preloaded, we are also NCCL's profiler plugin if NCCL is told where we are. Children
// inherit the variable, so only the first process of a job says so.
void pointNcclAtThisLibrary() {
  if (std::getenv("NCCL_PROFILER_PLUGIN") != nullptr) return;
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&pointNcclAtThisLibrary), &info) == 0 || info.dli_fname == nullptr) return;
  const char* preload = std::getenv("LD_PRELOAD");
  const char* base = std::strrchr(info.dli_fname, '/');
  base = base == nullptr ? info.dli_fname : base + 1;
  if (preload == nullptr || std::strstr(preload, base) == nullptr) return;  // dlopened, not preloaded
  char path[PATH_MAX];
  if (realpath(info.dli_fname, path) == nullptr) return;
  setenv("NCCL_PROFILER_PLUGIN", path, 0);
  std::fprintf(stderr, "commtrace: NCCL_PROFILER_PLUGIN was unset; set it to %s so NCCL loads commtrace\n", path);
}

__attribute__((constructor)) void onLoad() {
  commtrace::RingRegistry::global().setFirstRingHook(&startRecording);
  pointNcclAtThisLibrary();
}

// Linked -z nodelete, so this runs at process exit, not at NCCL's dlclose: the last
// records of the process reach the file.
__attribute__((destructor)) void onExit() { commtrace_stop(); }

}  // namespace
