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

ThreadRing* RingRegistry::registerCurrentThread(uint32_t records) {
  auto* ring = new (std::nothrow) ThreadRing(records, static_cast<uint32_t>(gettid()));
  if (ring == nullptr) return nullptr;
  if (!arrivals_.enqueue(ring)) {
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
  new (&rings_) std::vector<std::unique_ptr<ThreadRing>>();
  new (&ring_was_retired_) std::vector<bool>();
  new (&doorbell_) Doorbell();
  flush_requests_.forgetAfterFork();
  tl_ring = nullptr;
  pthread_setspecific(g_exit_key, nullptr);  // the thread's exit must not retire a parent's ring
  first_ring_seen_.store(false, std::memory_order_release);
}

void RingRegistry::retireCurrentThread(void* ring) {
  tl_ring = nullptr;
  static_cast<ThreadRing*>(ring)->retire();
}

void RingRegistry::adoptArrivals() {
  ThreadRing* ring = nullptr;
  while (arrivals_.try_dequeue(ring)) rings_.emplace_back(ring);
}

void RingRegistry::freeRetired() {
  size_t kept = 0;
  for (size_t i = 0; i < rings_.size(); ++i) {
    const bool drained_after_retire = i < ring_was_retired_.size() && ring_was_retired_[i];
    if (!drained_after_retire) rings_[kept++] = std::move(rings_[i]);
  }
  rings_.resize(kept);
  ring_was_retired_.clear();
}

}  // namespace commtrace
