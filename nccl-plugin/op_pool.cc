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
    SlotState state = s.state.load(std::memory_order_relaxed);
    if (state == SlotState::kLive) continue;
    if (!s.state.compare_exchange_strong(state, SlotState::kLive, std::memory_order_acquire,
                                         std::memory_order_relaxed)) {
      continue;
    }
    // Odd sequence first: a late reader of the previous occupant sees the change.
    s.sequence.store(s.sequence.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    s.role.store(role, std::memory_order_relaxed);
    s.own_cpu_times.store(false, std::memory_order_relaxed);
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

void* OpPool::publish(uint32_t index, uint8_t channel) {
  OpSlot& s = slots_[index];
  const uint32_t sequence = s.sequence.load(std::memory_order_relaxed) + 1;
  s.sequence.store(sequence, std::memory_order_release);
  return OpHandle::make(s.role.load(std::memory_order_relaxed), index, sequence, channel);
}

OpSlot* OpPool::resolve(const void* handle, uint32_t roles) {
  const OpHandle h(handle);
  if (!h.ours() || (roles & roleBit(h.role())) == 0 || h.index() >= kSlots) return nullptr;
  OpSlot& s = slots_[h.index()];
  if ((s.sequence.load(std::memory_order_acquire) & OpHandle::kGenerationMask) != h.generation()) return nullptr;
  if (s.state.load(std::memory_order_acquire) == SlotState::kFree) return nullptr;
  return &s;
}

bool OpPool::snapshot(const void* handle, uint32_t roles, SharedSnapshot& out) {
  const OpHandle h(handle);
  if (!h.ours() || (roles & roleBit(h.role())) == 0 || h.index() >= kSlots) return false;
  const OpSlot& s = slots_[h.index()];
  const uint32_t before = s.sequence.load(std::memory_order_acquire);
  if ((before & OpHandle::kGenerationMask) != h.generation()) return false;
  const SharedFields& f = s.shared;
  constexpr auto relaxed = std::memory_order_relaxed;
  out = SharedSnapshot{f.comm_id.load(relaxed),   f.op_index.load(relaxed),     f.count.load(relaxed),
                       f.stream.load(relaxed),    f.user_tag.load(relaxed),     f.cpu_start_ns.load(relaxed),
                       f.func.load(relaxed),      f.datatype.load(relaxed),     f.root_or_peer.load(relaxed),
                       f.graph_captured.load(relaxed), f.channel.load(relaxed), f.is_send.load(relaxed)};
  std::atomic_thread_fence(std::memory_order_acquire);
  return s.sequence.load(std::memory_order_relaxed) == before;
}

}  // namespace commtrace::plugin
