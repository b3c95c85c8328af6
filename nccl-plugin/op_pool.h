// The state behind every event handle the plugin gives NCCL. NCCL keeps our handles for as
// long as it likes: a Coll's KernelCh children arrive on the proxy thread after the Coll
// stopped, a CollApi's Coll child may start after the CollApi stopped, a graph replay may
// name a parent from long ago, and a PXN ProxyOp names a parent in another process. So a
// handle is never a pointer: it is a tagged index into one static pool plus the slot's
// generation, checked on every use. A stale or foreign handle is recognised and ignored;
// it can never touch freed memory, because the pool is never freed.
//
// Slots are claimed round-robin from a per-thread cursor (no shared allocator line to
// bounce), without locks or allocation. A stopped API or ProxyOp slot stays readable until
// the cursor comes round again; readers copy it under the slot's sequence lock.
#pragma once

#include <atomic>
#include <cstdint>

#include "core/record.h"

namespace commtrace::plugin {

enum class Role : uint8_t { kNone, kGroupApi, kApi, kColl, kP2p, kKernelCh, kProxyOp, kProxyStep };
constexpr uint32_t roleBit(Role r) { return 1u << static_cast<int>(r); }

enum class SlotState : uint8_t {
  kFree,      // claimable
  kLive,      // owned by an event in flight
  kStopping,  // its one stop is running (a second stop, or a claim, finds it taken)
  kStopped,   // its event stopped; readable by late children until reclaimed
};

// A slot's lifecycle word: its sequence (odd while the slot is being (re)written; its low
// bits are the generation in the slot's handles) and its state, changed together by one
// compare-and-swap. Every transition names the generation it expects, so a stale handle can
// never stop, free or complete a slot that has since been claimed again.
struct SlotTag {
  static constexpr uint64_t make(uint32_t sequence, SlotState state) { return uint64_t{sequence} << 8 | uint8_t(state); }
  static constexpr uint32_t sequence(uint64_t tag) { return static_cast<uint32_t>(tag >> 8); }
  static constexpr SlotState state(uint64_t tag) { return static_cast<SlotState>(tag & 0xFF); }
};

// A plain copy of SharedFields.
struct SharedSnapshot {
  uint64_t comm_id, op_index, count, stream, user_tag, cpu_start_ns;
  StringId func, datatype;
  int32_t root_or_peer;
  uint8_t graph_captured, channel, is_send;
  uint64_t seq;  // a Coll's NCCL seqNumber
};

// Fields another thread reads through a handle (a Coll reading its CollApi parent, a
// ProxyStep reading its ProxyOp): relaxed atomics, made consistent by the slot's sequence.
// The owner stores them all at once before publishing; readers load them all at once.
struct SharedFields {
  std::atomic<uint64_t> comm_id{0};
  std::atomic<uint64_t> op_index{0};
  std::atomic<uint64_t> count{0};
  std::atomic<uint64_t> stream{0};
  std::atomic<uint64_t> user_tag{0};
  std::atomic<uint64_t> cpu_start_ns{0};
  std::atomic<StringId> func{0};
  std::atomic<StringId> datatype{0};
  std::atomic<int32_t> root_or_peer{0};
  std::atomic<uint8_t> graph_captured{0};
  std::atomic<uint8_t> channel{0};
  std::atomic<uint8_t> is_send{0};
  std::atomic<uint64_t> seq{0};

  void store(const SharedSnapshot& v) {
    constexpr auto relaxed = std::memory_order_relaxed;
    comm_id.store(v.comm_id, relaxed);
    op_index.store(v.op_index, relaxed);
    count.store(v.count, relaxed);
    stream.store(v.stream, relaxed);
    user_tag.store(v.user_tag, relaxed);
    cpu_start_ns.store(v.cpu_start_ns, relaxed);
    func.store(v.func, relaxed);
    datatype.store(v.datatype, relaxed);
    root_or_peer.store(v.root_or_peer, relaxed);
    graph_captured.store(v.graph_captured, relaxed);
    channel.store(v.channel, relaxed);
    is_send.store(v.is_send, relaxed);
    seq.store(v.seq, relaxed);
  }
  SharedSnapshot load() const {
    constexpr auto relaxed = std::memory_order_relaxed;
    return SharedSnapshot{comm_id.load(relaxed),        op_index.load(relaxed), count.load(relaxed),
                          stream.load(relaxed),         user_tag.load(relaxed), cpu_start_ns.load(relaxed),
                          func.load(relaxed),           datatype.load(relaxed), root_or_peer.load(relaxed),
                          graph_captured.load(relaxed), channel.load(relaxed),  is_send.load(relaxed),
                          seq.load(relaxed)};
  }
};

struct alignas(64) OpSlot {
  std::atomic<uint64_t> tag{SlotTag::make(0, SlotState::kFree)};
  std::atomic<Role> role{Role::kNone};
  std::atomic<bool> own_cpu_times{false};  // op slot without an API parent (v4): its own start/stop
  // Completion of a Coll/P2p, tagged with the generation it counts for (high 32 bits): 1
  // for its own stop, one per expected KernelCh stop, one while its API parent has not
  // stopped. Whoever takes the count to 0 writes the record.
  std::atomic<uint64_t> pending{0};
  // API slot: its own handle while no op waits for its exit time, then that op's handle,
  // then kApiStopped. An op registers by a CAS expecting the API's handle, generation included.
  std::atomic<uint64_t> child{0};
  std::atomic<uint64_t> cpu_end_ns{0};   // API slot: exit time; op slot: its API's exit time
  std::atomic<uint64_t> gpu_first_start{0};
  std::atomic<uint64_t> gpu_last_start{0};
  std::atomic<uint64_t> gpu_last_stop{0};
  SharedFields shared;
  // Owner-only draft of the record this slot will write: touched by the starting thread,
  // then by whichever thread completes it (ordered by the acq_rel on `pending`).
  union Draft {
    CollRecord coll;
    P2pRecord p2p;
    ProxyStepRecord proxy_step;
    ApiSpanRecord api_span;
  } draft{};
};

// Handle layout (64 bits, never 0): magic 8 | role 4 | channel 8 | generation 20 | index 24.
class OpHandle {
 public:
  static constexpr uint64_t kMagic = 0xC7;
  static constexpr uint32_t kGenerationMask = (1u << 20) - 1;

  static void* make(Role role, uint32_t index, uint32_t sequence, uint8_t channel = 0) {
    const uint64_t bits = kMagic << 56 | uint64_t(role) << 52 | uint64_t(channel) << 44 |
                          uint64_t(sequence & kGenerationMask) << 24 | index;
    return reinterpret_cast<void*>(bits);
  }
  explicit OpHandle(const void* handle) : bits_(reinterpret_cast<uint64_t>(handle)) {}

  bool ours() const { return bits_ >> 56 == kMagic; }
  Role role() const { return static_cast<Role>(bits_ >> 52 & 0xF); }
  uint8_t channel() const { return static_cast<uint8_t>(bits_ >> 44); }
  uint32_t generation() const { return static_cast<uint32_t>(bits_ >> 24) & kGenerationMask; }
  uint32_t index() const { return static_cast<uint32_t>(bits_) & 0xFFFFFF; }

 private:
  uint64_t bits_;
};

class OpPool {
 public:
  static constexpr uint32_t kSlots = 8192;  // 2 MiB; far above the ops NCCL has in flight

  static OpPool& global();

  // Claims a slot for `role` and returns its index, its sequence odd (being written) until
  // publish(). kNoSlot when every probed slot is in flight.
  static constexpr uint32_t kNoSlot = ~0u;
  uint32_t claim(Role role);
  // The handle the claimed slot will have once published (to store in the slot before).
  void* handleAfterPublish(uint32_t index) const;
  void* publish(uint32_t index);

  OpSlot& slot(uint32_t index) { return slots_[index]; }

  // The live slot a handle names, if the handle is ours, of one of `roles` (bit per Role)
  // and of the slot's current generation; nullptr otherwise. *tag gets the tag it matched.
  OpSlot* resolve(const void* handle, uint32_t roles, uint64_t* tag = nullptr);

  // Copies a slot's SharedFields into out, whatever the slot's state; false, with out
  // untouched, if the handle's generation is gone before or during the copy.
  bool snapshot(const void* handle, uint32_t roles, SharedSnapshot& out);

  // True if the slot still carries the handle's generation (checked after reading a field).
  bool stillCurrent(const void* handle) const;

  // Moves a slot from the tag it was resolved with to `to`; false if someone else moved it.
  static bool transition(OpSlot& s, uint64_t from, SlotState to) {
    return s.tag.compare_exchange_strong(from, SlotTag::make(SlotTag::sequence(from), to), std::memory_order_acq_rel,
                                         std::memory_order_relaxed);
  }

  // Completion counting, per generation (see OpSlot::pending).
  static void setPending(OpSlot& s, uint32_t generation, uint32_t count) {
    s.pending.store(uint64_t{generation} << 32 | count, std::memory_order_release);
  }
  // Counts one completion for `generation`; true for the one call that reaches 0.
  static bool completeOne(OpSlot& s, uint32_t generation, bool all = false);

  // Slots whose claim found nothing free (the event went untracked).
  uint64_t exhausted() const { return exhausted_.load(std::memory_order_relaxed); }

  // visit(fields) for every live slot of one of `roles` whose SharedFields could be copied
  // whole (a slot reclaimed during the copy is skipped). Any thread.
  template <class Visit>
  void forEachLiveSnapshot(uint32_t roles, Visit&& visit) {
    forEachLive([&](const OpSlot& s, uint64_t tag) {
      const Role role = s.role.load(std::memory_order_relaxed);
      const auto index = static_cast<uint32_t>(&s - slots_);
      SharedSnapshot fields;
      if ((roles & roleBit(role)) != 0 && snapshot(OpHandle::make(role, index, SlotTag::sequence(tag)), roles, fields)) visit(fields);
    });
  }

  // visit(slot, tag) for every live slot.
  template <class Visit>
  void forEachLive(Visit&& visit) {
    for (uint32_t i = 0; i < kSlots; ++i) {
      const uint64_t tag = slots_[i].tag.load(std::memory_order_acquire);
      if (SlotTag::state(tag) == SlotState::kLive) visit(slots_[i], tag);
    }
  }

 private:
  OpSlot slots_[kSlots];
  std::atomic<uint32_t> next_thread_start_{0};
  std::atomic<uint64_t> exhausted_{0};
};


}  // namespace commtrace::plugin
