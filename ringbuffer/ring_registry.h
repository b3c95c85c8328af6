// Every thread's ring, handed from producers to the one consumer (the flusher). Producers
// announce a new ring through a moodycamel ConcurrentQueue, so registration takes no lock;
// the consumer keeps the rings in a private list, so walking them needs no lock either.
// A thread that exits retires its ring; the consumer frees it after draining it, so the
// thread's last records are never lost.
#pragma once

#include <concurrentqueue.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/record.h"
#include "ringbuffer/doorbell.h"
#include "ringbuffer/flush_request.h"
#include "ringbuffer/thread_ring.h"

namespace commtrace {

class RingRegistry {
 public:
  static constexpr uint32_t kDefaultRingRecords = 16384;  // 2 MiB per producing thread
  static constexpr uint64_t kDefaultRingMemory = uint64_t{256} << 20;
  // Drained rings of exited threads kept for new ones (a thread pool's, a per-request
  // thread's): mapping and faulting in 2 MiB cost a thread 1.5 ms, twenty times its start.
  static constexpr uint32_t kSpareRings = 8;

  // Producer side. Allocates the calling thread's ring (ringRecords(), or `records` for a
  // thread known to deliver in bursts); nullptr if that fails, if the rings would take more
  // than ringMemoryLimit() together, or once rings are refused.
  ThreadRing* registerCurrentThread();
  ThreadRing* registerCurrentThread(uint32_t records);
  // A record its thread had no ring for (record() drops it): counted per kind, process-wide,
  // for the flusher to write as the drops of kRinglessThread. Not the hot path: a thread
  // without a ring already failed to get one.
  void countRinglessDrop(RecordKind kind) { ringless_drops_[static_cast<int>(kind)].fetch_add(1, std::memory_order_relaxed); }
  uint64_t ringlessDrops(RecordKind kind) const { return ringless_drops_[static_cast<int>(kind)].load(std::memory_order_relaxed); }
  // What all rings may take together (COMMTRACE_RING_MEMORY_MB), and take now.
  void setRingMemoryLimit(uint64_t bytes) { ring_memory_limit_.store(bytes, std::memory_order_relaxed); }
  uint64_t ringMemoryLimit() const { return ring_memory_limit_.load(std::memory_order_relaxed); }
  uint64_t ringMemory() const { return ring_memory_.load(std::memory_order_relaxed); }
  // Recording could not start (or failed): no thread gets a ring from now on.
  void refuseRings() { rings_refused_.store(true, std::memory_order_relaxed); }
  static ThreadRing* currentThreadRing() { return tl_ring; }
  Doorbell& doorbell() { return doorbell_; }
  FlushRequests& flushRequests() { return flush_requests_; }
  // For paths about to lose what this process recorded (communicator finalize, exit, exec,
  // signals): FlushRequests::requestAndWait through this registry's doorbell; closing for
  // those after which the process records no more (exit, exec, signals).
  bool flushAndWait(uint32_t timeout_ms, bool closing = false) { return flush_requests_.requestAndWait(doorbell_, timeout_ms, closing); }

  // Called once, on the thread that registers the process's first ring, before its first
  // record is stored: how recording starts only in processes that record something.
  void setFirstRingHook(void (*hook)()) { first_ring_hook_.store(hook, std::memory_order_release); }

  // In a forked child (a pthread_atfork child handler), where only the forking thread
  // exists: the rings registered so far belong to the parent's threads and hold records
  // that belong in the parent's file. Forgets them, clears the forking thread's ring and
  // re-arms the first-ring hook and stops serving flush requests, so the child records into rings of its own and starts its
  // own flusher only if it records. The parent's rings and queue are left allocated and
  // untouched: another parent thread (the flusher, a registering producer) may have been
  // half-way through them when fork copied the memory.
  void forgetParentRingsAfterFork();

  // Ring size for threads that register from now on.
  void setRingRecords(uint32_t records) { ring_records_.store(records, std::memory_order_relaxed); }
  uint32_t ringRecords() const { return ring_records_.load(std::memory_order_relaxed); }

  // Consumer side (one thread at a time). Calls visitRing(ThreadRing&) for every ring,
  // oldest first, and then frees the rings of exited threads: visitRing must drain them.
  // A ring retired before the visit is empty after it, so nothing is lost.
  template <class VisitRing>
  void forEachRing(VisitRing&& visitRing) {
    adoptArrivals();
    for (auto& ring : rings_) {
      ring_was_retired_.push_back(ring->retired());
      visitRing(*ring);
    }
    freeRetired();
  }

  // The registry all faces of this process record into.
  static RingRegistry& global();

 private:
  RingRegistry();
  void adoptArrivals();
  void freeRetired();
  ThreadRing* spareRing(uint32_t records, uint32_t thread);
  ThreadRing* adopt(ThreadRing* ring);
  void release(std::unique_ptr<ThreadRing> ring);
  static void retireCurrentThread(void* ring);

  // initial-exec: one %fs-relative load on the hot path. It takes 8 bytes of the static
  // TLS surplus glibc keeps for dlopened libraries (NCCL dlopens us as its plugin).
  // constinit: other files then read it directly, not through a TLS init wrapper (whose
  // null check GCC 12 with -fsanitize=undefined miscompiles into a false "null pointer").
  static constinit thread_local ThreadRing* tl_ring __attribute__((tls_model("initial-exec")));
  moodycamel::ConcurrentQueue<ThreadRing*> arrivals_;
  moodycamel::ConcurrentQueue<ThreadRing*> spares_;  // drained, of the default size; their memory still counted
  std::atomic<uint32_t> spare_count_{0};
  std::vector<std::unique_ptr<ThreadRing>> rings_;  // consumer-owned
  std::vector<bool> ring_was_retired_;              // consumer scratch
  std::atomic<uint32_t> ring_records_;
  std::atomic<uint64_t> ring_memory_limit_{kDefaultRingMemory};
  std::atomic<uint64_t> ring_memory_{0};  // of the rings registered and not yet freed
  std::atomic<bool> rings_refused_{false};
  std::array<std::atomic<uint64_t>, kRecordKindCount> ringless_drops_{};
  std::atomic<void (*)()> first_ring_hook_{nullptr};
  std::atomic<bool> first_ring_seen_{false};
  Doorbell doorbell_;
  FlushRequests flush_requests_;
};

}  // namespace commtrace
