#include "core/gpu_use.h"

#include <atomic>

namespace commtrace {
namespace {

constinit std::atomic<void (*)()> g_hook{nullptr};
constinit std::atomic<bool> g_noted{false};

}  // namespace

void noteGpuInUse() {
  if (g_noted.load(std::memory_order_relaxed) || g_noted.exchange(true, std::memory_order_acq_rel)) return;
  if (auto* hook = g_hook.load(std::memory_order_acquire)) hook();
}

void setGpuInUseHook(void (*hook)()) { g_hook.store(hook, std::memory_order_release); }

}  // namespace commtrace
