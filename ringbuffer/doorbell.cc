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

void Doorbell::ring() {
  if (rung_.load(std::memory_order_relaxed) != 0) return;
  if (rung_.exchange(1, std::memory_order_release) == 0) {
    futex(&rung_, FUTEX_WAKE_PRIVATE, 1, nullptr);
  }
}

bool Doorbell::wait(uint64_t timeout_ns) {
  if (rung_.exchange(0, std::memory_order_acquire) != 0) return true;
  const timespec timeout{static_cast<time_t>(timeout_ns / 1000000000u),
                         static_cast<long>(timeout_ns % 1000000000u)};
  futex(&rung_, FUTEX_WAIT_PRIVATE, 0, &timeout);
  return rung_.exchange(0, std::memory_order_acquire) != 0;
}

}  // namespace commtrace
