// The memory CUPTI fills: a fixed number of buffers allocated once at attach, handed out
// and taken back without a lock. When all are out (the flusher is behind), CUPTI gets none
// and drops and counts records itself, so the face's memory never grows.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace commtrace::cupti {

class ActivityBuffers {
 public:
  static constexpr size_t kBufferBytes = size_t{1} << 20;  // ~4,850 kernel records
  static constexpr uint32_t kBuffers = 4;
  // Ring slots a delivering thread needs to take every buffer at once (a flush hands over
  // all of them on one thread, which no flusher drains meanwhile when it is the flusher).
  static constexpr uint32_t kRingRecords = 32768;

  // Once; false when the memory cannot be had. Later calls return true at once.
  bool allocate();
  // nullptr when every buffer is out.
  uint8_t* take();
  void give(uint8_t* buffer);
  uint32_t available() const { return static_cast<uint32_t>(__builtin_popcount(free_.load(std::memory_order_relaxed))); }

 private:
  // Never freed: CUPTI may hand a buffer back during exit, after static destructors ran.
  uint8_t* base_ = nullptr;                // 8-byte aligned, as CUPTI requires
  std::atomic<uint32_t> free_{0};          // bit i: buffer i is free
};

}  // namespace commtrace::cupti
