#include "ringbuffer/flush_request.h"

#include "ringbuffer/ringbuffer.h"

namespace commtrace {

bool FlushRequests::requestAndWait(Doorbell& doorbell, uint32_t timeout_ms) {
  if (!serving_.load(std::memory_order_acquire)) return false;
  const uint32_t ticket = taken_.fetch_add(1, std::memory_order_acq_rel) + 1;
  doorbell.ring();
  const uint64_t deadline = nowNs() + uint64_t{timeout_ms} * 1000000u;
  for (;;) {
    const uint32_t served = served_.load(std::memory_order_acquire);
    if (static_cast<int32_t>(served - ticket) >= 0) return true;
    const uint64_t now = nowNs();
    if (now >= deadline) return false;
    futexWait(served_, served, deadline - now);
  }
}

void FlushRequests::publishServed(uint32_t ticket) {
  if (served_.load(std::memory_order_relaxed) == ticket) return;  // no one waits: no syscall
  served_.store(ticket, std::memory_order_release);
  futexWakeAll(served_);
}

void FlushRequests::forgetAfterFork() {
  serving_.store(false, std::memory_order_relaxed);
  taken_.store(0, std::memory_order_relaxed);
  served_.store(0, std::memory_order_relaxed);
}

}  // namespace commtrace
