#include "interpose/capture_api.h"

#include <cstdlib>
#include <memory>
#include <mutex>

#include "interpose/launcher_env.h"
#include "ringbuffer/env_setting.h"
#include "sink/flusher.h"

namespace {

// Never destroyed: commtrace_stop() may run from an atexit handler after static destructors.
commtrace::Flusher* g_flusher = nullptr;
std::mutex g_mutex;  // start/stop are rare calls, never on a hot path

}  // namespace

extern "C" __attribute__((visibility("default"))) int commtrace_start(const char* dir) {
  std::lock_guard lock(g_mutex);
  if (g_flusher != nullptr) return -1;
  commtrace::FlusherOptions options;
  options.identity = commtrace::launcherIdentity();
  options.flush_period_ms = static_cast<uint32_t>(
      commtrace::envUint("COMMTRACE_FLUSH_MS", options.flush_period_ms, 10, 60'000));
  const char* env_dir = std::getenv("COMMTRACE_DIR");
  if (dir != nullptr) {
    options.dir = dir;
  } else if (env_dir != nullptr && env_dir[0] != '\0') {
    options.dir = env_dir;
  }
  auto flusher = std::make_unique<commtrace::Flusher>(options);
  if (!flusher->start()) return -1;
  g_flusher = flusher.release();
  return 0;
}

extern "C" __attribute__((visibility("default"))) void commtrace_stop(void) {
  std::lock_guard lock(g_mutex);
  if (g_flusher == nullptr) return;
  g_flusher->stop();
  delete g_flusher;
  g_flusher = nullptr;
}

extern "C" __attribute__((visibility("default"))) const char* commtrace_version(void) {
  return COMMTRACE_VERSION;
}
