#include "ringbuffer/thread_ring.h"

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <iterator>

namespace commtrace {
uint32_t ThreadRing::capacityFor(uint32_t capacity) { return std::bit_ceil(capacity < 2 ? 2u : capacity); }

uint64_t ThreadRing::bytesFor(uint32_t capacity) { return uint64_t{capacityFor(capacity)} * sizeof(RecordSlot); }

// The slots are a mapping of their own: freed, they go back to the system at once. From
// malloc, the rings of short-lived threads stayed in its arenas (2 MiB a thread, for good).
ThreadRing::ThreadRing(uint32_t capacity, uint32_t thread)
    : mask_(capacityFor(capacity) - 1), half_((mask_ + 1) / 2), slots_(nullptr), thread_(thread) {
  void* mapped = mmap(nullptr, bytesFor(capacity), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) return;
  slots_ = static_cast<RecordSlot*>(mapped);
  // Touch every page now, on the thread's first record, so later pushes never fault.
  std::memset(static_cast<void*>(slots_), 0, bytes());
}

void ThreadRing::reuse(uint32_t thread) {
  head_.store(0, std::memory_order_relaxed);
  tail_.store(0, std::memory_order_relaxed);
  cached_tail_ = 0;
  for (auto& dropped : dropped_) dropped.store(0, std::memory_order_relaxed);
  std::fill(std::begin(reported_drops_), std::end(reported_drops_), 0);
  retired_.store(false, std::memory_order_relaxed);
  thread_ = thread;
}

ThreadRing::~ThreadRing() {
  if (slots_ != nullptr) munmap(slots_, bytes());
}

}  // namespace commtrace
