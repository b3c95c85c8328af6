#include "interpose/settings.h"

#include "ringbuffer/env_setting.h"

namespace commtrace::interpose {

constinit Settings g_settings;

void loadSettings() {
  g_settings.nccl_api = envFlag("COMMTRACE_NCCL_API", true);
  g_settings.cuda_sync = envFlag("COMMTRACE_CUDA_SYNC", true);
  g_settings.exit_flush_ms = static_cast<uint32_t>(envUint("COMMTRACE_EXIT_FLUSH_MS", 1000, 0, 60'000));
}

}  // namespace commtrace::interpose
