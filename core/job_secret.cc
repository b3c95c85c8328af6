#include "core/job_secret.h"

#include <algorithm>
#include <atomic>

namespace commtrace {
namespace {

JobSecret g_secret{};
std::atomic<int> g_secret_state{0};  // 0 none, 1 being written, 2 readable
std::atomic<bool> g_communicator{false};

}  // namespace

void noteJobSecret(std::span<const uint8_t> secret) {
  int none = 0;
  if (!g_secret_state.compare_exchange_strong(none, 1, std::memory_order_acquire)) return;
  std::copy_n(secret.begin(), std::min(secret.size(), g_secret.size()), g_secret.begin());
  g_secret_state.store(2, std::memory_order_release);
}

std::optional<JobSecret> jobSecret() {
  if (g_secret_state.load(std::memory_order_acquire) != 2) return std::nullopt;
  return g_secret;
}

void noteCommunicatorMade() { g_communicator.store(true, std::memory_order_release); }
bool communicatorMade() { return g_communicator.load(std::memory_order_acquire); }

void forgetJobAfterFork() {
  g_secret_state.store(0, std::memory_order_relaxed);
  g_communicator.store(false, std::memory_order_relaxed);
}

}  // namespace commtrace
