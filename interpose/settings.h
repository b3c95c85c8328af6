// The preload face's COMMTRACE_* settings, parsed once by the library's constructor (before
// main, before any wrapper runs) and read-only afterwards, so wrappers read a plain global
// on their hot path. A bad value gets one "commtrace:" line naming it and the default used.
// A program that changes these variables after start-up does not change this process's
// settings (its children, which parse their own, see the new values).
#pragma once

#include <limits.h>

#include <cstdint>

namespace commtrace::interpose {

struct Settings {
  bool nccl_api = true;           // COMMTRACE_NCCL_API: the nccl* wrappers record (else they only forward)
  bool cuda_sync = true;          // COMMTRACE_CUDA_SYNC: the cuda*Synchronize/WaitEvent wrappers record
  uint32_t exit_flush_ms = 1000;  // COMMTRACE_EXIT_FLUSH_MS: the longest an exit path or signal waits for the last flush
  uint32_t flush_period_ms = 200;  // COMMTRACE_FLUSH_MS: the flusher's period, also the most a SIGKILL can lose
  char dir[PATH_MAX] = "commtrace-run";  // COMMTRACE_DIR: the run directory (relative to where recording starts)
};

// Parses the environment; called once, by the constructor.
void loadSettings();

extern constinit Settings g_settings;
inline const Settings& settings() { return g_settings; }

}  // namespace commtrace::interpose
