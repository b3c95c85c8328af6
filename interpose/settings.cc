#include "interpose/settings.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "ringbuffer/env_setting.h"

namespace commtrace::interpose {

constinit Settings g_settings;

namespace {

void loadDir(const char* name, char (&dir)[PATH_MAX]) {
  const char* value = std::getenv(name);
  if (value == nullptr || value[0] == '\0') return;
  if (std::strlen(value) >= sizeof dir) {
    std::fprintf(stderr, "commtrace: %s is longer than %d bytes; using %s\n", name, PATH_MAX - 1, dir);
    return;
  }
  std::strcpy(dir, value);
}

}  // namespace

void loadSettings() {
  static constexpr Settings kDefaults{};
  g_settings.nccl_api = envFlag("COMMTRACE_NCCL_API", kDefaults.nccl_api);
  g_settings.cuda_sync = envFlag("COMMTRACE_CUDA_SYNC", kDefaults.cuda_sync);
  g_settings.exit_flush_ms =
      static_cast<uint32_t>(envUint("COMMTRACE_EXIT_FLUSH_MS", kDefaults.exit_flush_ms, 0, 60'000));
  g_settings.flush_period_ms =
      static_cast<uint32_t>(envUint("COMMTRACE_FLUSH_MS", kDefaults.flush_period_ms, 10, 60'000));
  loadDir("COMMTRACE_DIR", g_settings.dir);
}

}  // namespace commtrace::interpose
