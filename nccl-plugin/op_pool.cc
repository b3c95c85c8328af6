#include "nccl-plugin/op_pool.h"

namespace commtrace::plugin {
namespace {

// Where this thread's next claim looks: threads start in different regions of the pool so
// that, in steady state, each finds its own just-freed slots and no two threads write the
// same lines. initial-exec like the ring pointer: one %fs-relative access.
constinit thread_local uint32_t tl_cursor __attribute__((tls_model("initial-exec"))) = 0;
constinit thread_local bool tl_cursor_set __attribute__((tls_model("initial-exec"))) = false;

// How far one claim searches before giving up: far enough to step over the few ops that
// wait for their GPU times, short enough to bound a claim when the pool is exhausted.
constexpr uint32_t kProbes = 64;

}  // namespace

OpPool& OpPool::global() {
  // Constant-initialised into .bss and never destroyed: NCCL may call us during exit.
  static constinit OpPool pool;
  return pool;
}

uint32_t OpPool::claim(Role role) {
  if (!tl_cursor_set) [[unlikely]] {
    tl_cursor = next_thread_start_.fetch_add(kSlots / 8, std::memory_order_relaxed);
    tl_cursor_set = true;
  }
  uint32_t cursor = tl_cursor;
  for (uint32_t probe = 0; probe < kProbes; ++probe) {
    const uint32_t index = cursor++ & (kSlots - 1);
    OpSlot& s = slots_[index];
    uint64_t tag = s.tag.load(std::memory_order_relaxed);
    const SlotState state = SlotTag::state(tag);
    if (state != SlotState::kFree && state != SlotState::kStopped) continue;
    // One CAS takes the slot and makes its sequence odd: a late reader of the previous
    // occupant sees the change, a late stop finds its generation gone.
    const uint64_t claimed = SlotTag::make(SlotTag::sequence(tag) + 1, SlotState::kLive);
    if (!s.tag.compare_exchange_strong(tag, claimed, std::memory_order_acquire, std::memory_order_relaxed)) continue;
    std::atomic_thread_fence(std::memory_order_release);
    s.role.store(role, std::memory_order_relaxed);
    s.own_cpu_times.store(false, std::memory_order_relaxed);
    s.pending.store(0, std::memory_order_relaxed);
    s.child.store(0, std::memory_order_relaxed);
    s.cpu_end_ns.store(0, std::memory_order_relaxed);
    s.gpu_first_start.store(0, std::memory_order_relaxed);
    s.gpu_last_start.store(0, std::memory_order_relaxed);
    s.gpu_last_stop.store(0, std::memory_order_relaxed);
    tl_cursor = cursor;
    return index;
  }
  tl_cursor = cursor;
  exhausted_.fetch_add(1, std::memory_order_relaxed);
  return kNoSlot;
}

void* OpPool::handleAfterPublish(uint32_t index) const {
  const OpSlot& s = slots_[index];
  const uint32_t sequence = SlotTag::sequence(s.tag.load(std::memory_order_relaxed)) + 1;
  return OpHandle::make(s.role.load(std::memory_order_relaxed), index, sequence);
}

void* OpPool::publish(uint32_t index) {
  OpSlot& s = slots_[index];
  const uint32_t sequence = SlotTag::sequence(s.tag.load(std::memory_order_relaxed)) + 1;
  s.tag.store(SlotTag::make(sequence, SlotState::kLive), std::memory_order_release);
  return OpHandle::make(s.role.load(std::memory_order_relaxed), index, sequence);
}

OpSlot* OpPool::resolve(const void* handle, uint32_t roles, uint64_t* tag_out) {
  const OpHandle h(handle);
  if (!h.ours() || (roles & roleBit(h.role())) == 0 || h.index() >= kSlots) return nullptr;
  OpSlot& s = slots_[h.index()];
  const uint64_t tag = s.tag.load(std::memory_order_acquire);
  if ((SlotTag::sequence(tag) & OpHandle::kGenerationMask) != h.generation()) return nullptr;
  if (SlotTag::state(tag) != SlotState::kLive) return nullptr;
  if (tag_out != nullptr) *tag_out = tag;
  return &s;
}

bool OpPool::stillCurrent(const void* handle) const {
  const OpHandle h(handle);
  std::atomic_thread_fence(std::memory_order_acquire);
  const uint64_t tag = slots_[h.index()].tag.load(std::memory_order_relaxed);
  return (SlotTag::sequence(tag) & OpHandle::kGenerationMask) == h.generation();
}

bool OpPool::snapshot(const void* handle, uint32_t roles, SharedSnapshot& out) {
  const OpHandle h(handle);
  if (!h.ours() || (roles & roleBit(h.role())) == 0 || h.index() >= kSlots) return false;
  const OpSlot& s = slots_[h.index()];
  const uint32_t before = SlotTag::sequence(s.tag.load(std::memory_order_acquire));
  if ((before & OpHandle::kGenerationMask) != h.generation()) return false;  // odd or another generation
  const SharedSnapshot copy = s.shared.load();
  if (!stillCurrent(handle)) return false;  // torn: the slot was reclaimed meanwhile
  out = copy;
  return true;
}

bool OpPool::completeOne(OpSlot& s, uint32_t generation, bool all) {
  uint64_t pending = s.pending.load(std::memory_order_relaxed);
  while (true) {
    const uint32_t count = static_cast<uint32_t>(pending);
    // Another generation's count, or already complete (a surplus stop): nothing to do.
    if (pending >> 32 != generation || count == 0) return false;
    const uint64_t next = all ? pending - count : pending - 1;
    if (s.pending.compare_exchange_weak(pending, next, std::memory_order_acq_rel, std::memory_order_relaxed)) {
      return static_cast<uint32_t>(next) == 0;
    }
  }
}

}  // namespace commtrace::plugin
