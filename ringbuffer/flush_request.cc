#include "ringbuffer/flush_request.h"

#include "ringbuffer/ringbuffer.h"

namespace commtrace {

// The closing flag is set after the ticket is taken and taken by the flusher before it reads
// the ticket to serve: a drain that takes the flag serves this ticket. A drain that served
// the ticket without taking the flag (it came in between) leaves the flag set: then one more
// request, whose answer takes it.
bool FlushRequests::requestAndWait(Doorbell& doorbell, uint32_t timeout_ms, bool closing) {
  if (!serving_.load(std::memory_order_acquire)) return false;
  const uint64_t deadline = nowNs() + uint64_t{timeout_ms} * 1000000u;
  for (;;) {
    const uint32_t ticket = taken_.fetch_add(1, std::memory_order_acq_rel) + 1;
    if (closing) closing_.store(true, std::memory_order_release);
    doorbell.ring();
    for (;;) {
      const uint32_t served = served_.load(std::memory_order_acquire);
      if (static_cast<int32_t>(served - ticket) >= 0) break;
      const uint64_t now = nowNs();
      if (now >= deadline) return false;
      futexWait(served_, served, deadline - now);
    }
    if (!closing || !closing_.load(std::memory_order_acquire)) return true;
    if (nowNs() >= deadline) return false;
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
  closing_.store(false, std::memory_order_relaxed);
}

}  // namespace commtrace
