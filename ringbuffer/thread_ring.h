// A single-producer single-consumer ring of RecordSlots, one per producing thread. The
// producer is the thread that owns it; the consumer is the flusher. A full ring drops the
// record and counts it per kind: the caller never waits and never allocates.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>

#include "core/record.h"

namespace commtrace {

enum class PushResult : uint8_t { kStored, kStoredHalfFull, kDropped };

class ThreadRing {
 public:
  // capacity is rounded up to a power of two. Without memory for its slots the ring is not
  // valid() and must not be used.
  ThreadRing(uint32_t capacity, uint32_t thread);
  ~ThreadRing();
  ThreadRing(const ThreadRing&) = delete;
  ThreadRing& operator=(const ThreadRing&) = delete;
  bool valid() const { return slots_ != nullptr; }
  // The slots a ring asked for `capacity` has, and the memory they take.
  static uint32_t capacityFor(uint32_t capacity);
  static uint64_t bytesFor(uint32_t capacity);

  // kStoredHalfFull: this push took the ring (as the producer last saw it) to half full,
  // the moment to ask the flusher for an early drain.
  template <class T>
  PushResult push(const T& record) {
    static_assert(sizeof(T) <= sizeof(RecordSlot::Payload));
    constexpr RecordKind kind = KindOf<T>::value;
    const uint64_t head = head_.load(std::memory_order_relaxed);
    bool still_half_full = false;
    if (head - cached_tail_ > mask_) {
      cached_tail_ = tail_.load(std::memory_order_acquire);
      if (head - cached_tail_ > mask_) {
        countDrop(kind);
        return PushResult::kDropped;
      }
      // The refreshed fill may already be past half, where the crossing below never
      // happens this lap: ask for a drain now.
      still_half_full = head - cached_tail_ >= half_;
    }
    RecordSlot& slot = slots_[head & mask_];
    prefetchForWrite(&slots_[(head + kPrefetchAhead) & mask_]);
    slot.kind = kind;
    slot.thread = thread_;
    std::memcpy(&slot.payload, &record, sizeof(T));
    head_.store(head + 1, std::memory_order_release);
    return still_half_full || head + 1 - cached_tail_ == half_ ? PushResult::kStoredHalfFull : PushResult::kStored;
  }

  // Consumer side: calls visit(const RecordSlot&) for every record pushed so far, in push
  // order, and frees their slots as it goes (every kReleaseEvery records), so a producer
  // that is filling the ring meanwhile gets room before the whole drain is done. Returns
  // how many were visited.
  template <class Visit>
  uint64_t drain(Visit&& visit) {
    static constexpr uint64_t kReleaseEvery = 1024;
    // Locals, not members: mask_ and slots_ share the producer's cache line (head_), which
    // the producer writes on every push; rereading them per record bounces that line.
    const uint64_t mask = mask_;
    const RecordSlot* const slots = slots_;
    const uint64_t start = tail_.load(std::memory_order_relaxed);
    const uint64_t head = head_.load(std::memory_order_acquire);
    for (uint64_t tail = start; tail != head;) {
      const uint64_t batch_end = head - tail > kReleaseEvery ? tail + kReleaseEvery : head;
      for (; tail != batch_end; ++tail) visit(slots[tail & mask]);
      tail_.store(tail, std::memory_order_release);
    }
    return head - start;
  }

  // Consumer side: report(kind, cumulative) for every kind whose drop count changed since
  // the previous call.
  template <class Report>
  void forEachNewDropCount(Report&& report) {
    for (int k = 1; k < kRecordKindCount; ++k) {
      const uint64_t n = dropped(static_cast<RecordKind>(k));
      if (n == reported_drops_[k]) continue;
      reported_drops_[k] = n;
      report(static_cast<RecordKind>(k), n);
    }
  }

  uint64_t dropped(RecordKind kind) const {
    return dropped_[static_cast<int>(kind)].load(std::memory_order_relaxed);
  }
  uint32_t thread() const { return thread_; }
  uint32_t capacity() const { return static_cast<uint32_t>(mask_ + 1); }
  uint64_t bytes() const { return bytesFor(capacity()); }  // its slots' memory

  // The owning thread has exited: once drained, the ring can be freed.
  void retire() { retired_.store(true, std::memory_order_release); }
  // A retired ring, drained, handed to a new thread (which alone touches it from then on):
  // empty, its counts at zero, its slots' pages already faulted in.
  void reuse(uint32_t thread);
  bool retired() const { return retired_.load(std::memory_order_acquire); }

 private:
  // The flusher read these lines one lap ago, so writing them means taking them back from
  // its cache. A prefetch for writing starts that a few slots ahead, overlapped with this
  // push; measured 15 -> 9 ns per push on x86-64 while a consumer drains next door.
  // x86-64: PREFETCHW itself (GCC's generic x86-64 target would turn __builtin_prefetch's
  // write hint into a read prefetch; a NOP on CPUs without it); elsewhere (AArch64: PRFM
  // PSTL1KEEP) the builtin.
  static constexpr uint64_t kPrefetchAhead = 16;
  static void prefetchForWrite(const RecordSlot* slot) {
    const char* line = reinterpret_cast<const char*>(slot);
#if defined(__x86_64__)
    asm volatile("prefetchw %0" ::"m"(*line));
    asm volatile("prefetchw %0" ::"m"(*(line + 64)));
#else
    __builtin_prefetch(line, 1, 3);
    __builtin_prefetch(line + 64, 1, 3);
#endif
  }

  void countDrop(RecordKind kind) {
    // Single writer: a load and a store, no read-modify-write on the drop path.
    auto& counter = dropped_[static_cast<int>(kind)];
    counter.store(counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  alignas(64) std::atomic<uint64_t> head_{0};
  uint64_t cached_tail_ = 0;
  uint64_t mask_;
  uint64_t half_;
  RecordSlot* slots_;
  uint32_t thread_;
  alignas(64) std::atomic<uint64_t> tail_{0};
  uint64_t reported_drops_[kRecordKindCount] = {};  // consumer-owned
  alignas(64) std::atomic<uint64_t> dropped_[kRecordKindCount] = {};
  std::atomic<bool> retired_{false};
};

}  // namespace commtrace
