#include "cupti/activity_buffers.h"

#include <new>

namespace commtrace::cupti {

static_assert(ActivityBuffers::kBuffers <= 32, "one bit per buffer in a 32-bit mask");

bool ActivityBuffers::allocate() {
  if (base_ != nullptr) return true;
  constexpr size_t kAlign = 8;
  auto* memory = new (std::nothrow) uint8_t[kBuffers * kBufferBytes + kAlign];
  if (memory == nullptr) return false;
  const auto address = reinterpret_cast<uintptr_t>(memory);
  base_ = memory + ((kAlign - address % kAlign) % kAlign);
  free_.store(kBuffers == 32 ? ~0u : (1u << kBuffers) - 1, std::memory_order_release);
  return true;
}

uint8_t* ActivityBuffers::take() {
  uint32_t mask = free_.load(std::memory_order_acquire);
  while (mask != 0) {
    const int i = __builtin_ctz(mask);
    if (free_.compare_exchange_weak(mask, mask & ~(1u << i), std::memory_order_acq_rel)) return base_ + i * kBufferBytes;
  }
  return nullptr;
}

void ActivityBuffers::give(uint8_t* buffer) {
  if (buffer < base_ || buffer >= base_ + kBuffers * kBufferBytes) return;  // not ours
  const auto i = static_cast<uint32_t>((buffer - base_) / kBufferBytes);
  free_.fetch_or(1u << i, std::memory_order_release);
}

}  // namespace commtrace::cupti
