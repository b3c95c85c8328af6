#include "nccl-plugin/plugin_settings.h"

#include "ringbuffer/env_setting.h"

namespace commtrace::plugin {

const PluginSettings& pluginSettings() {
  static const PluginSettings settings{
      .kernel_timing = envFlag("COMMTRACE_KERNEL_TIMING", true),
      .proxy_events = envFlag("COMMTRACE_PROXY_EVENTS", false),
  };
  return settings;
}

}  // namespace commtrace::plugin
