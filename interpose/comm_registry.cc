#include "interpose/comm_registry.h"

#include <sys/random.h>
#include <unistd.h>

#include <new>

#include "ringbuffer/ringbuffer.h"

namespace commtrace::interpose {
namespace {

// splitmix64's finalizer: every input bit moves every output bit.
uint64_t finalize(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

uint64_t nonZero(uint64_t id) { return id != 0 ? id : 1; }

uint64_t mix(uint64_t a, uint64_t b) { return finalize(a ^ finalize(b + 0x9e3779b97f4a7c15ull)); }

}  // namespace

void CommEntry::reset(const void* handle, uint64_t comm_id) {
  delete[] p2p_ops.exchange(nullptr, std::memory_order_relaxed);
  p2p_peers.store(0, std::memory_order_relaxed);
  p2p_unknown_peer.store(0, std::memory_order_relaxed);
  plugin_comm_id.store(0, std::memory_order_relaxed);
  resolved.store(false, std::memory_order_relaxed);
  n_ranks.store(0, std::memory_order_relaxed);
  rank.store(-1, std::memory_order_relaxed);
  cuda_device.store(-1, std::memory_order_relaxed);
  global_rank.store(-1, std::memory_order_relaxed);
  info_emitted.store(0, std::memory_order_relaxed);
  for (auto& c : calls) c.store(0, std::memory_order_relaxed);
  coll_ops.store(0, std::memory_order_relaxed);
  splits.store(0, std::memory_order_relaxed);
  shrinks.store(0, std::memory_order_relaxed);
  handle_.store(handle, std::memory_order_relaxed);
  comm_id_.store(comm_id, std::memory_order_relaxed);
  const uint64_t generation = state.load(std::memory_order_relaxed) & ~kStateMask;
  state.store(generation | kLive, std::memory_order_release);
}

// The state is read on both sides of the handle: an entry recycled in between (claimed
// and reset for another communicator) changed its stamp, and is not taken for this one.
// Reading the handle and then the state alone once let a lookup return the entry an
// insert had just taken over for another handle (CommRegistryConcurrencyTest, 1 run in 20).
bool CommEntry::holdsLive(const void* wanted) const {
  const uint64_t before = state.load(std::memory_order_acquire);
  if ((before & kStateMask) != kLive || handle_.load(std::memory_order_acquire) != wanted) return false;
  return state.load(std::memory_order_acquire) == before;
}

void CommEntry::markDead(uint64_t stamp_before) {
  if ((stamp_before & kStateMask) != kLive) return;
  uint64_t expected = stamp_before;
  state.compare_exchange_strong(expected, (stamp_before & ~kStateMask) | kDead, std::memory_order_acq_rel);
}

bool CommEntry::setRanks(int32_t n, int32_t my_rank) {
  if (n <= 0) return false;
  if (p2p_ops.load(std::memory_order_acquire) == nullptr) {
    auto* ops = new (std::nothrow) std::atomic<uint64_t>[2 * static_cast<size_t>(n)]();
    if (ops == nullptr) return false;
    p2p_peers.store(n, std::memory_order_relaxed);
    std::atomic<uint64_t>* none = nullptr;
    if (!p2p_ops.compare_exchange_strong(none, ops, std::memory_order_release)) delete[] ops;
  }
  n_ranks.store(n, std::memory_order_relaxed);
  if (my_rank >= 0) rank.store(my_rank, std::memory_order_relaxed);
  return true;
}

CommRegistry::~CommRegistry() {
  for (auto& slot : slots_) delete slot.load(std::memory_order_relaxed);
}

CommRegistry& CommRegistry::global() {
  union Storage {
    constexpr Storage() : registry() {}
    ~Storage() {}  // never destroys the registry
    CommRegistry registry;
  };
  static constinit Storage storage;
  return storage.registry;
}

uint32_t CommRegistry::home(const void* handle) const {
  // Heap addresses: the low bits are alignment, the rest spread by a multiplicative hash.
  const uint64_t h = (reinterpret_cast<uintptr_t>(handle) >> 4) * 0x9e3779b97f4a7c15ull;
  return static_cast<uint32_t>(h >> 52) & (kCapacity - 1);
}

// Slots are never emptied once used, so a probe may stop at the first empty one: whatever
// it looks for would have been put there or before.
CommEntry* CommRegistry::find(const void* handle) const {
  if (handle == nullptr) return nullptr;
  uint32_t i = home(handle);
  for (uint32_t probes = 0; probes < kCapacity; ++probes, i = (i + 1) & (kCapacity - 1)) {
    CommEntry* e = slots_[i].load(std::memory_order_acquire);
    if (e == nullptr) return nullptr;
    if (e->holdsLive(handle)) return e;
  }
  return nullptr;
}

CommEntry* CommRegistry::add(const void* handle, uint64_t comm_id) {
  if (CommEntry* e = claim(handle, comm_id, /*same_handle_only=*/true)) return e;
  return claim(handle, comm_id, /*same_handle_only=*/false);
}

CommEntry* CommRegistry::addIfAbsent(const void* handle, uint64_t comm_id) {
  if (CommEntry* e = find(handle)) return e;
  return claim(handle, comm_id, /*same_handle_only=*/false);
}

// Walks the handle's probe path and takes over the first entry it may: one of the same
// handle (same_handle_only), else a dead one or an empty slot. An entry is taken over by
// moving its state to kClaimed with a CAS, so two claimers never share one.
CommEntry* CommRegistry::claim(const void* handle, uint64_t comm_id, bool same_handle_only) {
  CommEntry* fresh = nullptr;  // allocated at the first empty slot, freed if never published
  uint32_t i = home(handle);
  for (uint32_t probes = 0; probes < kCapacity; ++probes, i = (i + 1) & (kCapacity - 1)) {
    CommEntry* e = slots_[i].load(std::memory_order_acquire);
    if (e == nullptr) {
      if (same_handle_only) break;
      if (fresh == nullptr) fresh = new (std::nothrow) CommEntry();
      if (fresh == nullptr) return nullptr;
      fresh->reset(handle, comm_id);
      if (slots_[i].compare_exchange_strong(e, fresh, std::memory_order_acq_rel)) return fresh;
      // Another insert filled the slot: e is its entry, considered below.
    }
    const uint64_t st = e->state.load(std::memory_order_acquire);
    const uint64_t kind = st & CommEntry::kStateMask;
    const bool wanted = same_handle_only ? e->handle() == handle && kind != CommEntry::kClaimed
                                         : kind == CommEntry::kDead;
    uint64_t expected = st;
    if (wanted && e->state.compare_exchange_strong(expected, (st & ~CommEntry::kStateMask) + 4 + CommEntry::kClaimed,
                                                   std::memory_order_acq_rel)) {
      e->reset(handle, comm_id);
      delete fresh;
      return e;
    }
  }
  delete fresh;
  return nullptr;
}

uint64_t commIdOfUniqueId(const void* bytes, size_t size) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a offset basis
  const auto* p = static_cast<const unsigned char*>(bytes);
  for (size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;  // FNV prime
  }
  return nonZero(finalize(h));
}

uint64_t commIdOfSplit(uint64_t parent_id, uint64_t nth_split, int color) {
  return nonZero(mix(mix(parent_id, nth_split), static_cast<uint64_t>(static_cast<uint32_t>(color)) | 1ull << 40));
}

uint64_t commIdOfShrink(uint64_t parent_id, uint64_t nth_shrink) {
  return nonZero(mix(mix(parent_id, nth_shrink), 0x5368726b));  // a different lane from splits
}

uint64_t randomCommId() {
  uint64_t value = 0;
  if (getrandom(&value, sizeof value, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof value)) {
    static std::atomic<uint64_t> calls{0};
    value = mix(mix(nowNs(), static_cast<uint64_t>(getpid())), calls.fetch_add(1, std::memory_order_relaxed));
  }
  return nonZero(finalize(value));
}

}  // namespace commtrace::interpose
