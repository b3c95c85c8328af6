#include "interpose/capture_api.h"

#include <cstdio>
#include <memory>
#include <mutex>
#include <new>

#include "interpose/export.h"
#include "interpose/launcher_env.h"
#include "interpose/process_life.h"
#include "interpose/settings.h"
#include "sink/flusher.h"

namespace {

// Never destroyed: commtrace_stop() may run from an atexit handler after static destructors.
commtrace::Flusher* g_flusher = nullptr;
std::mutex g_mutex;  // start/stop are rare calls, never on a hot path

}  // namespace

namespace commtrace::interpose {

void abandonRecorderInForkedChild() {
  new (&g_mutex) std::mutex();
  g_flusher = nullptr;
}

}  // namespace commtrace::interpose

COMMTRACE_EXPORT int commtrace_start(const char* dir) {
  using commtrace::interpose::settings;
  std::lock_guard lock(g_mutex);
  if (g_flusher != nullptr) return -1;
  try {
    commtrace::FlusherOptions options;
    options.identity = commtrace::launcherIdentity();
    options.flush_period_ms = settings().flush_period_ms;
    options.dir = dir != nullptr ? dir : settings().dir;
    auto flusher = std::make_unique<commtrace::Flusher>(options);
    if (!flusher->start()) return -1;
    g_flusher = flusher.release();
  } catch (const std::bad_alloc&) {
    std::fputs("commtrace: out of memory starting the recorder; this process is not recorded\n", stderr);
    return -1;
  }
  commtrace::interpose::recordingStarted();
  return 0;
}

COMMTRACE_EXPORT void commtrace_stop(void) {
  std::lock_guard lock(g_mutex);
  if (g_flusher == nullptr) return;
  g_flusher->stop();
  delete g_flusher;
  g_flusher = nullptr;
  commtrace::interpose::recordingStopped();
}

COMMTRACE_EXPORT const char* commtrace_version(void) {
  return COMMTRACE_VERSION;
}
