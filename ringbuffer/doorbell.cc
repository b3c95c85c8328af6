#include "ringbuffer/doorbell.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

namespace commtrace {
namespace {

long futex(std::atomic<uint32_t>* word, int op, uint32_t value, const timespec* timeout) {
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, value, timeout, nullptr, 0);
}

}  // namespace

void futexWait(std::atomic<uint32_t>& word, uint32_t expected, uint64_t timeout_ns) {
  const timespec timeout{static_cast<time_t>(timeout_ns / 1000000000u), static_cast<long>(timeout_ns % 1000000000u)};
  futex(&word, FUTEX_WAIT_PRIVATE, expected, &timeout);
}

void futexWakeAll(std::atomic<uint32_t>& word) { futex(&word, FUTEX_WAKE_PRIVATE, INT32_MAX, nullptr); }

// Both sides store their flag, then read the other's (sequentially consistent): either the
// producer sees the flusher asleep and wakes it, or the flusher sees the bell before it
// sleeps; FUTEX_WAIT on rung_ == 0 closes the last gap.
void Doorbell::ring() {
  if (rung_.load(std::memory_order_relaxed) != 0) return;
  if (rung_.exchange(1) == 0 && sleeping_.load() != 0) futexWakeAll(rung_);
}

bool Doorbell::wait(uint64_t timeout_ns) {
  sleeping_.store(1);
  if (rung_.exchange(0) == 0) {
    futexWait(rung_, 0, timeout_ns);
  } else {
    sleeping_.store(0);
    return true;
  }
  sleeping_.store(0);
  return rung_.exchange(0) != 0;
}

}  // namespace commtrace
