#include "core/api_witness.h"

namespace commtrace {
namespace {

constinit std::atomic<PluginApiEvents> g_plugin_api_events{PluginApiEvents::kUnknown};

}  // namespace

constinit thread_local ApiWitness tl_api_witness __attribute__((tls_model("initial-exec"))) = {};

// One NCCL binds one table version for the whole process, so every init says the same.
void notePluginApiEvents(bool delivered) {
  g_plugin_api_events.store(delivered ? PluginApiEvents::kDelivered : PluginApiEvents::kAbsent,
                            std::memory_order_relaxed);
}

PluginApiEvents pluginApiEvents() { return g_plugin_api_events.load(std::memory_order_relaxed); }

}  // namespace commtrace
