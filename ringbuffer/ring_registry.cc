#include "ringbuffer/ring_registry.h"

#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <new>

#include "ringbuffer/ringbuffer.h"

namespace commtrace {
namespace {

pthread_key_t g_exit_key;

}  // namespace

constinit thread_local ThreadRing* RingRegistry::tl_ring __attribute__((tls_model("initial-exec"))) = nullptr;

RingRegistry::RingRegistry() : ring_records_(kDefaultRingRecords) {
  // The key's destructor is how a thread's exit reaches us: pthread runs it for every
  // thread that set a value, after the thread's own code is done.
  pthread_key_create(&g_exit_key, &RingRegistry::retireCurrentThread);
}

RingRegistry& RingRegistry::global() {
  // Never destroyed: threads may still record while the process exits.
  static RingRegistry* registry = new RingRegistry();
  return *registry;
}

ThreadRing* RingRegistry::registerCurrentThread() {
  return registerCurrentThread(ring_records_.load(std::memory_order_relaxed));
}

// A thread refused a ring asks again at its next record: once retired rings are freed, it
// gets one. Refused for the memory limit, it rings the doorbell, which has the flusher free them.
ThreadRing* RingRegistry::registerCurrentThread(uint32_t records) {
  if (rings_refused_.load(std::memory_order_relaxed)) return nullptr;
  if (ThreadRing* spare = spareRing(records, static_cast<uint32_t>(gettid()))) return adopt(spare);
  const uint64_t bytes = ThreadRing::bytesFor(records);
  const uint64_t limit = ring_memory_limit_.load(std::memory_order_relaxed);
  if (ring_memory_.fetch_add(bytes, std::memory_order_relaxed) + bytes > limit) {
    ring_memory_.fetch_sub(bytes, std::memory_order_relaxed);
    doorbell_.ring();
    return nullptr;
  }
  auto* ring = new (std::nothrow) ThreadRing(records, static_cast<uint32_t>(gettid()));
  if (ring == nullptr || !ring->valid()) {
    delete ring;
    ring_memory_.fetch_sub(bytes, std::memory_order_relaxed);
    return nullptr;
  }
  return adopt(ring);
}

ThreadRing* RingRegistry::spareRing(uint32_t records, uint32_t thread) {
  // Spares are of the default size (a thread asking for another gets a ring of its own).
  if (spare_count_.load(std::memory_order_relaxed) == 0 || ThreadRing::capacityFor(records) != ThreadRing::capacityFor(ringRecords()))
    return nullptr;
  ThreadRing* ring = nullptr;
  if (!spares_.try_dequeue(ring)) return nullptr;
  spare_count_.fetch_sub(1, std::memory_order_relaxed);
  if (ring->capacity() != ThreadRing::capacityFor(records)) {  // kept before the ring size changed
    ring_memory_.fetch_sub(ring->bytes(), std::memory_order_relaxed);
    delete ring;
    return nullptr;
  }
  ring->reuse(thread);
  return ring;
}

// The calling thread's ring from now on, announced to the flusher.
ThreadRing* RingRegistry::adopt(ThreadRing* ring) {
  if (!arrivals_.enqueue(ring)) {
    ring_memory_.fetch_sub(ring->bytes(), std::memory_order_relaxed);
    delete ring;
    return nullptr;
  }
  tl_ring = ring;
  pthread_setspecific(g_exit_key, ring);
  if (!first_ring_seen_.exchange(true, std::memory_order_acq_rel)) {
    if (auto* hook = first_ring_hook_.load(std::memory_order_acquire)) hook();
  }
  return ring;
}

void RingRegistry::forgetParentRingsAfterFork() {
  // New objects over the old ones, whose destructors never run (the registry is never
  // destroyed): what they own stays allocated and is never touched again. Capacity 0: no
  // allocation here, in every fork of every preloaded process; blocks come with the first ring.
  new (&arrivals_) moodycamel::ConcurrentQueue<ThreadRing*>(0);
  new (&spares_) moodycamel::ConcurrentQueue<ThreadRing*>(0);
  spare_count_.store(0, std::memory_order_relaxed);
  new (&rings_) std::vector<std::unique_ptr<ThreadRing>>();
  new (&ring_was_retired_) std::vector<bool>();
  new (&doorbell_) Doorbell();
  flush_requests_.forgetAfterFork();
  ring_memory_.store(0, std::memory_order_relaxed);  // the parent's rings are not the child's to free
  rings_refused_.store(false, std::memory_order_relaxed);
  for (auto& drops : ringless_drops_) drops.store(0, std::memory_order_relaxed);
  tl_ring = nullptr;
  pthread_setspecific(g_exit_key, nullptr);  // the thread's exit must not retire a parent's ring
  first_ring_seen_.store(false, std::memory_order_release);
}

// An exiting thread's ring is drained at once (the doorbell), not at the next period: it is
// then the next thread's spare, where threads come and go faster than the flusher's period
// (5,000 threads in turn: 0.39 s, as without commtrace, against 3.7 s mapping new rings).
void RingRegistry::retireCurrentThread(void* ring) {
  tl_ring = nullptr;
  static_cast<ThreadRing*>(ring)->retire();
  global().doorbell_.ring();
}

void RingRegistry::adoptArrivals() {
  ThreadRing* ring = nullptr;
  while (arrivals_.try_dequeue(ring)) rings_.emplace_back(ring);
}

// A drained ring of an exited thread: kept as a spare, or unmapped.
void RingRegistry::release(std::unique_ptr<ThreadRing> ring) {
  const bool spare_size = ring->capacity() == ThreadRing::capacityFor(ringRecords());
  // Counted before it is queued: the count is never below the spares queued.
  if (spare_size && spare_count_.fetch_add(1, std::memory_order_relaxed) < kSpareRings && spares_.enqueue(ring.get())) {
    ring.release();
    return;
  }
  if (spare_size) spare_count_.fetch_sub(1, std::memory_order_relaxed);
  ring_memory_.fetch_sub(ring->bytes(), std::memory_order_relaxed);
}

void RingRegistry::freeRetired() {
  size_t kept = 0;
  for (size_t i = 0; i < rings_.size(); ++i) {
    const bool drained_after_retire = i < ring_was_retired_.size() && ring_was_retired_[i];
    if (!drained_after_retire) rings_[kept++] = std::move(rings_[i]);
    else release(std::move(rings_[i]));
  }
  rings_.resize(kept);
  ring_was_retired_.clear();
}

}  // namespace commtrace
