// The plugin's COMMTRACE_* settings, read once at the first communicator init.
//
//   COMMTRACE_KERNEL_TIMING  1 (default): enable KernelCh events for per-op GPU start/stop
//                            times. 0 halves NCCL's profiling cost for small ops (no
//                            profiler proxy ops, no host callbacks in graphs) at the price of
//                            GPU times.
//   COMMTRACE_PROXY_EVENTS   0 (default): 1 enables ProxyOp/ProxyStep events, one record per
//                            network transfer step: per-peer bytes and wait states on the
//                            network path, at a cost of one record per step.
#pragma once

namespace commtrace::plugin {

struct PluginSettings {
  bool kernel_timing = true;
  bool proxy_events = false;
};

const PluginSettings& pluginSettings();

}  // namespace commtrace::plugin
