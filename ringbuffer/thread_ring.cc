#include "ringbuffer/thread_ring.h"

#include <bit>

namespace commtrace {

ThreadRing::ThreadRing(uint32_t capacity, uint32_t thread)
    : mask_(std::bit_ceil(capacity < 2 ? 2u : capacity) - 1),
      half_((mask_ + 1) / 2),
      thread_(thread),
      storage_(new RecordSlot[mask_ + 1]) {
  slots_ = storage_.get();
  // Touch every page now, on the thread's first record, so later pushes never fault.
  std::memset(static_cast<void*>(slots_), 0, (mask_ + 1) * sizeof(RecordSlot));
}

}  // namespace commtrace
