// What the preload face knows about each live NCCL communicator, found by its ncclComm_t
// on every wrapped call. Lookups are lock-free (a linear probe of a fixed table of entry
// pointers); inserts happen at communicator creation, take no lock (a CAS claims a slot,
// so a fork can never inherit a held lock) and may allocate.
//
// Comm ids are computed, never exchanged: every rank derives the same id from what all
// ranks pass to NCCL (the unique id; the parent's id and how many splits it has seen).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "core/nccl_vocab.h"

namespace commtrace::interpose {

// The funcs a communicator counts calls of (NCCL's seqNumber is per communicator and func).
using OpFunc = nccl::Func;

// A counter of one communicator. NCCL forbids concurrent calls on one communicator, so a
// relaxed load and store (no locked instruction) is enough; a program that breaks the rule
// loses a count, nothing worse.
inline uint64_t bump(std::atomic<uint64_t>& counter) {
  const uint64_t value = counter.load(std::memory_order_relaxed);
  counter.store(value + 1, std::memory_order_relaxed);
  return value;
}

// One communicator. Entries are never freed while the registry lives: a slot whose
// communicator is dead is recycled in place for a later one, so a lookup racing with that
// only ever reads an entry's atomics, never freed memory.
struct CommEntry {
  CommEntry() = default;
  ~CommEntry() { delete[] p2p_ops.load(std::memory_order_relaxed); }
  CommEntry(const CommEntry&) = delete;
  CommEntry& operator=(const CommEntry&) = delete;

  // Live and holding this ncclComm_t, read consistently against a concurrent recycle.
  bool holdsLive(const void* wanted) const;
  const void* handle() const { return handle_.load(std::memory_order_relaxed); }
  uint64_t commId() const { return comm_id_.load(std::memory_order_relaxed); }

  // The entry's lifetime stamp, to take before ncclCommDestroy/Abort: markDead(stamp) then
  // kills this communicator only, even if NCCL freed it and the slot already holds the
  // next communicator at the same address.
  uint64_t stamp() const { return state.load(std::memory_order_acquire); }
  void markDead(uint64_t stamp_before);

  // Sizes the per-peer counters (cold, once). False if out of memory.
  bool setRanks(int32_t n, int32_t my_rank);

  // The k-th send to / receive from a peer, per direction: the k-th send A->B meets the
  // k-th receive on B from A (the plugin's rule, nccl-plugin/comm_context.h).
  std::atomic<uint64_t>& p2pCounter(bool is_recv, int peer) {
    std::atomic<uint64_t>* ops = p2p_ops.load(std::memory_order_acquire);
    const int32_t n = p2p_peers.load(std::memory_order_relaxed);
    if (ops == nullptr || peer < 0 || peer >= n) return p2p_unknown_peer;
    return ops[(is_recv ? n : 0) + peer];
  }

  // The id op records carry: the plugin's once learned (its records use it), else ours.
  uint64_t recordId() const {
    const uint64_t plugin = plugin_comm_id.load(std::memory_order_relaxed);
    return plugin != 0 ? plugin : commId();
  }

  std::atomic<uint64_t> plugin_comm_id{0};  // NCCL's commHash, as the plugin face reports it
  std::atomic<bool> resolved{false};        // NCCL answered n_ranks, rank and device
  std::atomic<int32_t> n_ranks{0};          // 0 while not known
  std::atomic<int32_t> rank{-1};
  std::atomic<int32_t> cuda_device{-1};
  std::atomic<int32_t> global_rank{-1};
  std::atomic<uint32_t> info_emitted{0};    // kOwnInfo | kPluginInfo: which CommInfo records are out
  static constexpr uint32_t kOwnInfo = 1, kPluginInfo = 2;

  std::atomic<uint64_t> calls[nccl::kFuncCount] = {};  // successful calls per func: the seq of the next
  std::atomic<uint64_t> coll_ops{0};               // collective op_index
  std::atomic<uint64_t> splits{0};                 // ncclCommSplit calls with this parent
  std::atomic<uint64_t> shrinks{0};                // ncclCommShrink calls with this parent

 private:
  friend class CommRegistry;
  // state: generation << 2 | kDead / kLive / kClaimed (being recycled)
  static constexpr uint64_t kDead = 0, kLive = 1, kClaimed = 2, kStateMask = 3;
  void reset(const void* handle, uint64_t comm_id);  // the claimer owns the entry meanwhile

  std::atomic<uint64_t> state{kLive};
  std::atomic<const void*> handle_{nullptr};  // the ncclComm_t
  std::atomic<uint64_t> comm_id_{0};          // ours, the same on every rank
  std::atomic<std::atomic<uint64_t>*> p2p_ops{nullptr};  // [2 * p2p_peers]: sends, then receives
  std::atomic<int32_t> p2p_peers{0};
  std::atomic<uint64_t> p2p_unknown_peer{0};
};

class CommRegistry {
 public:
  static constexpr uint32_t kCapacity = 4096;  // communicators a process can hold at once

  constexpr CommRegistry() = default;
  ~CommRegistry();  // frees the entries (the global registry is never destroyed)
  CommRegistry(const CommRegistry&) = delete;
  CommRegistry& operator=(const CommRegistry&) = delete;

  // Hot path: the live entry of a communicator, nullptr if none.
  CommEntry* find(const void* handle) const;

  // Cold: the entry of a communicator NCCL just created, live, with its id. NCCL reuses
  // the memory of destroyed communicators, so an entry with the same handle (dead, or
  // live if its destroy was never seen) is taken over. nullptr when the table is full or
  // memory is out.
  CommEntry* add(const void* handle, uint64_t comm_id);

  // Cold: like add, for a communicator first met at an op; an entry added meanwhile wins.
  CommEntry* addIfAbsent(const void* handle, uint64_t comm_id);

  // The process's registry. Never destroyed: wrappers may run during exit.
  static CommRegistry& global();

 private:
  uint32_t home(const void* handle) const;
  CommEntry* claim(const void* handle, uint64_t comm_id, bool same_handle_only);

  std::atomic<CommEntry*> slots_[kCapacity] = {};
};

// Comm ids: 64-bit mixes, never 0 (0 means "unknown" in records). NCCL's own commHash
// changed between versions, so we do not try to reproduce it.
uint64_t commIdOfUniqueId(const void* bytes, size_t size);  // FNV-1a, then a finalizer
uint64_t commIdOfSplit(uint64_t parent_id, uint64_t nth_split, int color);
uint64_t commIdOfShrink(uint64_t parent_id, uint64_t nth_shrink);
uint64_t randomCommId();  // ncclCommInitAll: nothing is shared, nothing needs to be

}  // namespace commtrace::interpose
