#include "nccl-plugin/event_recorder.h"


#include <pthread.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <new>
#include <string_view>

#include "core/api_witness.h"
#include "core/job_secret.h"
#include "core/phase_path.h"
#include "core/process_identity.h"
#include "core/settings.h"
#include "nccl-plugin/name_cache.h"
#include "nccl-plugin/op_pool.h"
#include "ringbuffer/ringbuffer.h"

namespace commtrace::plugin {
namespace {

using nccl::EventState;

constexpr uint32_t kOpRoles = roleBit(Role::kColl) | roleBit(Role::kP2p);

// Our pid, for the PXN check on every ProxyOp (getpid() is a syscall). Refreshed in a
// forked child.
std::atomic<int> g_pid{0};

// Interned once at the first init, so the hot path never meets a static's init guard.
std::atomic<StringId> g_group_name{0};

// Communicators initialised and not yet finalized: the flush after the last finalize is a
// closing one (init and finalize only, never the hot path).
std::atomic<int> g_live_comms{0};

OpPool& pool() { return OpPool::global(); }
StringId name(const char* s) { return NameCache::global().intern(s); }

// Bytes per element for NCCL's datatype names, cached per interned id. NCCL reports
// ncclUint8 (and any type it cannot name) as "Unknown": its size stays unknown (0), so the
// record's byte count says "unknown" rather than guessing.
uint64_t typeSize(StringId datatype) {
  static constinit std::atomic<uint8_t> cache[StringTable::kOverflowId + 1] = {};  // size + 1; 0 = not looked up
  if (datatype > StringTable::kOverflowId) return 0;
  uint8_t cached = cache[datatype].load(std::memory_order_relaxed);
  if (cached == 0) [[unlikely]] {
    cached = static_cast<uint8_t>(nccl::sizeOfNamed(StringTable::global().lookup(datatype)) + 1);
    cache[datatype].store(cached, std::memory_order_relaxed);
  }
  return cached - 1u;
}

void atomicMin(std::atomic<uint64_t>& target, uint64_t value) {  // 0 means "none yet"
  uint64_t current = target.load(std::memory_order_relaxed);
  while ((current == 0 || value < current) &&
         !target.compare_exchange_weak(current, value, std::memory_order_relaxed)) {
  }
}

void atomicMax(std::atomic<uint64_t>& target, uint64_t value) {
  uint64_t current = target.load(std::memory_order_relaxed);
  while (value > current && !target.compare_exchange_weak(current, value, std::memory_order_relaxed)) {
  }
}

template <class OpRecord>
void fillGpuTimes(OpSlot& s, OpRecord& r) {
  r.gpu_start_ns = s.gpu_first_start.load(std::memory_order_relaxed);
  r.gpu_end_ns = s.gpu_last_stop.load(std::memory_order_relaxed);
}

uint32_t generationOf(const void* handle) { return OpHandle(handle).generation(); }

// Frees a slot its caller owns (it completed the op, or won the stop).
void freeSlot(OpSlot& s) {
  const uint32_t sequence = SlotTag::sequence(s.tag.load(std::memory_order_relaxed));
  s.tag.store(SlotTag::make(sequence, SlotState::kFree), std::memory_order_release);
}

// Writes a finished Coll/P2p and frees its slot. The caller took `pending` to 0, so it
// owns the slot and sees every write made before each decrement.
void emitOp(OpSlot& s) {
  const uint64_t cpu_end = s.cpu_end_ns.load(std::memory_order_relaxed);
  if (s.role.load(std::memory_order_relaxed) == Role::kColl) {
    CollRecord r = s.draft.coll;
    r.cpu_end_ns = cpu_end;
    fillGpuTimes(s, r);
    const uint64_t first = s.gpu_first_start.load(std::memory_order_relaxed);
    const uint64_t last = s.gpu_last_start.load(std::memory_order_relaxed);
    r.gpu_channel_spread_ns = static_cast<uint32_t>(last > first ? last - first : 0);
    record(r);
  } else {
    P2pRecord r = s.draft.p2p;
    r.cpu_end_ns = cpu_end;
    fillGpuTimes(s, r);
    record(r);
  }
  freeSlot(s);
}

// A surplus stop (more KernelCh than channels announced, a second stop) finds the count at
// 0 or another generation's count, and does nothing.
void completeOne(OpSlot& s, uint32_t generation) {
  if (OpPool::completeOne(s, generation)) emitOp(s);
}

// Links a starting op to its API parent (v5+) and returns the parent's fields. The API's
// exit time reaches the op whichever stops first: the op registers itself as the API's
// child (and waits for one more completion), or finds the API already stopped and copies
// its exit time.
bool adoptApiParent(OpSlot& op, void* op_handle, const void* api_parent, SharedSnapshot& api) {
  if (api_parent == nullptr || !pool().snapshot(api_parent, roleBit(Role::kApi), api)) return false;
  OpSlot& parent = pool().slot(OpHandle(api_parent).index());
  // Expecting the API's own handle (its generation included): succeeds only while that
  // very API is live and has no child yet.
  uint64_t expected = reinterpret_cast<uint64_t>(api_parent);
  if (parent.child.compare_exchange_strong(expected, reinterpret_cast<uint64_t>(op_handle),
                                           std::memory_order_acq_rel, std::memory_order_acquire)) {
    return true;  // the API's stop delivers the exit time and the last completion
  }
  // Stopped already (or reclaimed): its exit time counts only if the slot still holds it.
  const uint64_t cpu_end = parent.cpu_end_ns.load(std::memory_order_acquire);
  op.cpu_end_ns.store(pool().stillCurrent(api_parent) ? cpu_end : 0, std::memory_order_relaxed);
  op.pending.fetch_sub(1, std::memory_order_relaxed);  // nobody else holds the handle yet
  return true;
}

// Fills what an op record takes from its API parent (v5+), or, without one (v4), makes the
// op time itself. True with `api` filled when the parent was found.
template <class OpRecord>
bool takeApiFields(OpSlot& s, void* handle, const void* api_parent, OpRecord& r, SharedSnapshot& api) {
  if (!adoptApiParent(s, handle, api_parent, api)) {
    r.cpu_start_ns = nowNs();  // v4: the op's own start and stop are all we have
    s.own_cpu_times.store(true, std::memory_order_relaxed);
    s.pending.fetch_sub(1, std::memory_order_relaxed);  // no API stop to wait for
    return false;
  }
  r.stream = api.stream;
  r.graph_captured = api.graph_captured;
  r.cpu_start_ns = api.cpu_start_ns;
  if (api.user_tag != 0) r.user_tag = api.user_tag;
  if constexpr (requires { r.parent_func; }) {
    if (api.func != r.func) r.parent_func = api.func;  // AlltoAll / Gather / Scatter pieces
  }
  return true;
}

constexpr uint64_t kApiStopped = ~uint64_t{0};  // no valid handle: its magic byte is 0xFF

void stopApi(OpSlot& s, uint64_t tag) {
  if (!OpPool::transition(s, tag, SlotState::kStopping)) return;  // stopped twice
  const uint64_t now = nowNs();
  s.cpu_end_ns.store(now, std::memory_order_release);
  const uint64_t child = s.child.exchange(kApiStopped, std::memory_order_acq_rel);
  if (OpHandle(reinterpret_cast<void*>(child)).role() != Role::kApi) {
    // An op registered: it cannot complete before this delivery, so its slot is its own.
    void* op_handle = reinterpret_cast<void*>(child);
    if (OpSlot* op = pool().resolve(op_handle, kOpRoles)) {
      op->cpu_end_ns.store(now, std::memory_order_relaxed);
      completeOne(*op, generationOf(op_handle));
    }
  }
  s.tag.store(SlotTag::make(SlotTag::sequence(tag), SlotState::kStopped), std::memory_order_release);
}

// ProxyStep and GroupApi: the record is complete at the stop; the stop that wins the slot
// writes it.
template <class Record>
void stopSpan(OpSlot& s, uint64_t tag, Record OpSlot::Draft::*draft) {
  if (!OpPool::transition(s, tag, SlotState::kStopping)) return;
  Record r = s.draft.*draft;
  r.cpu_end_ns = nowNs();
  record(r);
  freeSlot(s);
}

// The ProxyStep state's place in ProxyStepRecord::state_ns (send: GPUWait, PeerWait, Wait;
// receive: Wait, FlushWait, GPUWait), -1 for states we do not time.
int proxyStepStateIndex(EventState state) {
  switch (state) {
    case nccl::kProxyStepSendGpuWait:
    case nccl::kProxyStepRecvWait: return 0;
    case nccl::kProxyStepSendPeerWait:
    case nccl::kProxyStepRecvFlushWait: return 1;
    case nccl::kProxyStepSendWait:
    case nccl::kProxyStepRecvGpuWait: return 2;
    default: return -1;
  }
}

int activationMask(bool has_api_events) {
  const Settings& s = settings();
  uint64_t mask = nccl::kColl | nccl::kP2p;
  if (has_api_events) mask |= nccl::kGroupApi | nccl::kCollApi | nccl::kP2pApi;
  if (s.kernel_timing) mask |= nccl::kKernelCh;
  if (s.proxy_events) mask |= nccl::kProxyOp | nccl::kProxyStep;
  return static_cast<int>(mask);
}

}  // namespace

NameCache& NameCache::global() {
  static constinit NameCache cache;
  return cache;
}

CommContext* initComm(uint64_t comm_id, int* activation_mask, const char* comm_name, int n_nodes, int n_ranks,
                      int rank, bool has_api_events) {
  static std::once_flag once;
  std::call_once(once, [] {
    loadSettings();  // done already when the library's constructor ran
    g_pid.store(getpid(), std::memory_order_relaxed);
    g_group_name.store(StringTable::global().intern("ncclGroup"), std::memory_order_relaxed);
    // A forked child has its own pid, and none of its parent's communicators.
    pthread_atfork(nullptr, nullptr, [] {
      g_pid.store(getpid(), std::memory_order_relaxed);
      g_live_comms.store(0, std::memory_order_relaxed);
    });
  });
  auto* comm = new (std::nothrow) CommContext(comm_id, n_ranks, rank);
  if (comm == nullptr || comm->p2p_ops == nullptr) {
    delete comm;
    return nullptr;
  }
  const int mask = activationMask(has_api_events);
  comm->expect_kernel_ch = (mask & nccl::kKernelCh) != 0;
  // One int shared by every communicator of the process: every init writes the same value.
  if (activation_mask != nullptr) *activation_mask = mask;
  g_live_comms.fetch_add(1, std::memory_order_relaxed);
  noteCommunicatorMade();
  record(CommInfoRecord{.comm_id = comm_id,
                        .cpu_ns = nowNs(),
                        .comm_name = StringTable::global().intern(comm_name),
                        .n_nodes = n_nodes,
                        .n_ranks = n_ranks,
                        .rank = rank,
                        .global_rank = globalRank(),
                        .cuda_device = -1});
  return comm;
}

void finalizeComm(CommContext* comm) {
  if (comm == nullptr) return;
  // Ops whose GPU times never all arrived (an aborted communicator, fewer KernelCh than
  // channels announced) are written with what is known, once: claiming `pending` makes
  // a late stop on another thread a no-op.
  // Events the pool had no room for, process-wide and cumulative, so the file says so.
  if (const uint64_t untracked = pool().exhausted(); untracked > 0) {
    record(DropSummaryRecord{.cpu_ns = nowNs(), .dropped_kind = static_cast<uint8_t>(RecordKind::kColl),
                             .untracked = untracked});
  }
  pool().forEachLive([&](OpSlot& s, uint64_t tag) {
    const Role role = s.role.load(std::memory_order_relaxed);
    if ((kOpRoles & roleBit(role)) == 0) return;
    if (s.shared.comm_id.load(std::memory_order_relaxed) != comm->comm_id) return;
    const uint32_t generation = SlotTag::sequence(tag) & OpHandle::kGenerationMask;
    if (OpPool::completeOne(s, generation, /*all=*/true)) emitOp(s);
  });
  delete comm;
  // A process may end right after its last finalize, through _exit (Python's multiprocessing
  // workers do), where no destructor and no wrapper of ours runs when NCCL loaded us as its
  // plugin only: what this communicator recorded reaches the file now, or the time runs out.
  // After the last one the file is marked closed, so that such a process does not read as
  // killed; one that goes on recording reopens it with its next chunk.
  const bool last = g_live_comms.fetch_sub(1, std::memory_order_relaxed) == 1;
  RingRegistry::global().flushAndWait(settings().exit_flush_ms, /*closing=*/last);
}

void* startGroupApi(CommContext& comm, int group_depth) {
  // Depth 1 is the group NCCL wraps around every single call: its span is the call's own
  // CollApi/P2pApi span, so only the user's ncclGroupStart/End groups are worth a record.
  if (group_depth <= 1) return nullptr;
  const uint32_t index = pool().claim(Role::kGroupApi);
  if (index == OpPool::kNoSlot) return nullptr;
  OpSlot& s = pool().slot(index);
  s.draft.api_span = ApiSpanRecord{.comm_id = comm.comm_id,
                                   .arg = static_cast<uint64_t>(group_depth),
                                   .cpu_start_ns = nowNs(),
                                   .name = g_group_name.load(std::memory_order_relaxed)};
  return pool().publish(index);
}

void* startApi(CommContext& comm, const ApiView& api) {
  witnessApiEvent(comm.comm_id);  // the preload face's wrapper, if one is calling, records nothing twice
  const uint32_t index = pool().claim(Role::kApi);
  if (index == OpPool::kNoSlot) return nullptr;
  OpSlot& s = pool().slot(index);
  s.shared.store(SharedSnapshot{.comm_id = comm.comm_id,
                                .count = api.count,
                                .stream = reinterpret_cast<uint64_t>(api.stream),
                                .user_tag = api.user_tag,
                                .cpu_start_ns = nowNs(),
                                .func = name(api.func),
                                .datatype = name(api.datatype),
                                .root_or_peer = api.root,
                                .graph_captured = api.graph_captured});
  s.child.store(reinterpret_cast<uint64_t>(pool().handleAfterPublish(index)), std::memory_order_relaxed);
  return pool().publish(index);
}

void* startColl(CommContext& comm, const CollView& coll) {
  const uint32_t index = pool().claim(Role::kColl);
  if (index == OpPool::kNoSlot) return nullptr;
  OpSlot& s = pool().slot(index);
  const uint64_t op_index = comm.coll_ops.fetch_add(1, std::memory_order_relaxed);
  const StringId func = name(coll.func);
  // What the flusher's in-flight report reads (in_flight_report.h); the start follows below.
  s.shared.store(SharedSnapshot{.comm_id = comm.comm_id, .op_index = op_index, .func = func, .root_or_peer = -1,
                                .seq = coll.seq_number});
  const StringId datatype = name(coll.datatype);
  // AllGather/Broadcast Coll events carry NCCL's rewritten task: count in bytes with
  // "ncclInt8" (2.27+). The byte total is right either way; the user's view comes from
  // the CollApi parent below.
  s.draft.coll = CollRecord{.comm_id = comm.comm_id,
                            .seq = coll.seq_number,
                            .op_index = op_index,
                            .count = coll.count,
                            .bytes = coll.count * typeSize(datatype),
                            .user_tag = coll.user_tag,
                            .func = func,
                            .datatype = datatype,
                            .algo = name(coll.algo),
                            .proto = name(coll.proto),
                            .phase_path = currentPhasePath(),  // NCCL starts a Coll on the issuing thread
                            .root = coll.root,
                            .n_channels = coll.n_channels,
                            .n_warps = coll.n_warps};
  const uint32_t kernel_ch = comm.expect_kernel_ch ? coll.n_channels : 0;
  OpPool::setPending(s, generationOf(pool().handleAfterPublish(index)), 2 + kernel_ch);  // own, KernelCh, API stops
  void* handle = pool().publish(index);
  SharedSnapshot api;
  if (takeApiFields(s, handle, coll.api_parent, s.draft.coll, api)) {
    s.draft.coll.count = api.count;  // the user's, where NCCL rewrote AllGather/Broadcast
    s.draft.coll.datatype = api.datatype;
  }
  s.shared.cpu_start_ns.store(s.draft.coll.cpu_start_ns, std::memory_order_relaxed);
  return handle;
}

void* startP2p(CommContext& comm, const P2pView& p2p) {
  const uint32_t index = pool().claim(Role::kP2p);
  if (index == OpPool::kNoSlot) return nullptr;
  OpSlot& s = pool().slot(index);
  const StringId func = name(p2p.func);
  const bool is_recv = p2p.func != nullptr && p2p.func[0] == 'R';
  const uint64_t op_index = comm.p2pCounter(is_recv, p2p.peer).fetch_add(1, std::memory_order_relaxed);
  s.shared.store(SharedSnapshot{.comm_id = comm.comm_id, .op_index = op_index, .func = func, .root_or_peer = p2p.peer});
  const StringId datatype = name(p2p.datatype);
  s.draft.p2p = P2pRecord{.comm_id = comm.comm_id,
                          .op_index = op_index,
                          .count = p2p.count,
                          .bytes = p2p.count * typeSize(datatype),
                          .user_tag = p2p.user_tag,
                          .func = func,
                          .datatype = datatype,
                          .peer = p2p.peer,
                          .phase_path = currentPhasePath(),
                          .n_channels = p2p.channels_known ? p2p.n_channels : uint8_t{0}};
  // v4 never fills p2p.nChannels, so there is no count of KernelCh to wait for: a v4 P2p
  // completes at its stop, without GPU times.
  const uint32_t kernel_ch = comm.expect_kernel_ch && p2p.channels_known ? p2p.n_channels : 0;
  OpPool::setPending(s, generationOf(pool().handleAfterPublish(index)), 2 + kernel_ch);
  void* handle = pool().publish(index);
  SharedSnapshot api;
  takeApiFields(s, handle, p2p.api_parent, s.draft.p2p, api);
  s.shared.cpu_start_ns.store(s.draft.p2p.cpu_start_ns, std::memory_order_relaxed);
  return handle;
}

void* startKernelCh(const void* parent, uint8_t channel, uint64_t p_timer) {
  OpSlot* op = pool().resolve(parent, kOpRoles);
  if (op == nullptr) return nullptr;
  atomicMin(op->gpu_first_start, p_timer);
  atomicMax(op->gpu_last_start, p_timer);
  const OpHandle h(parent);
  // No slot of its own: the handle names the parent op and the channel.
  return OpHandle::make(Role::kKernelCh, h.index(), h.generation(), channel);
}

void* startProxyOp(CommContext& comm, const void* parent, const nccl::ProxyOpDescr& op) {
  SharedSnapshot parent_fields{.comm_id = comm.comm_id, .op_index = ~uint64_t{0}};  // parent unknown
  // PXN: a ProxyOp created by another process names a parent in that process's memory.
  if (op.pid == g_pid.load(std::memory_order_relaxed)) pool().snapshot(parent, kOpRoles, parent_fields);
  const uint32_t index = pool().claim(Role::kProxyOp);
  if (index == OpPool::kNoSlot) return nullptr;
  pool().slot(index).shared.store(SharedSnapshot{.comm_id = parent_fields.comm_id,
                                                 .op_index = parent_fields.op_index,
                                                 .root_or_peer = op.peer,
                                                 .channel = op.channel_id,
                                                 .is_send = static_cast<uint8_t>(op.is_send != 0)});
  return pool().publish(index);
}

void* startProxyStep(const void* parent, int step) {
  SharedSnapshot op;
  if (!pool().snapshot(parent, roleBit(Role::kProxyOp), op)) return nullptr;
  const uint32_t index = pool().claim(Role::kProxyStep);
  if (index == OpPool::kNoSlot) return nullptr;
  pool().slot(index).draft.proxy_step = ProxyStepRecord{.comm_id = op.comm_id,
                                                         .op_index = op.op_index,
                                                         .cpu_start_ns = nowNs(),
                                                         .peer = op.root_or_peer,
                                                         .step = step,
                                                         .channel = op.channel,
                                                         .is_send = op.is_send};
  return pool().publish(index);
}

void stopEvent(void* handle) {
  const OpHandle h(handle);
  uint64_t tag = 0;
  OpSlot* s = pool().resolve(handle, ~0u, &tag);
  if (s == nullptr) return;
  switch (h.role()) {
    case Role::kColl:
    case Role::kP2p:
      if (s->own_cpu_times.load(std::memory_order_relaxed)) s->cpu_end_ns.store(nowNs(), std::memory_order_relaxed);
      completeOne(*s, h.generation());
      break;
    case Role::kKernelCh: completeOne(*s, h.generation()); break;
    case Role::kApi: stopApi(*s, tag); break;
    case Role::kProxyOp: OpPool::transition(*s, tag, SlotState::kStopped); break;
    case Role::kProxyStep: stopSpan(*s, tag, &OpSlot::Draft::proxy_step); break;
    case Role::kGroupApi: stopSpan(*s, tag, &OpSlot::Draft::api_span); break;
    case Role::kNone: break;
  }
}

void recordEventState(void* handle, EventState state, const nccl::StateArgs* args) {
  const OpHandle h(handle);
  if (h.role() == Role::kKernelCh && state == nccl::kKernelChStop) {
    OpSlot* op = pool().resolve(handle, roleBit(Role::kKernelCh));
    if (op != nullptr && args != nullptr) atomicMax(op->gpu_last_stop, args->kernel_ch.p_timer);
    return;
  }
  if (h.role() != Role::kProxyStep) return;
  const int at = proxyStepStateIndex(state);
  OpSlot* s = pool().resolve(handle, roleBit(Role::kProxyStep));
  if (s == nullptr || at < 0) return;
  ProxyStepRecord& r = s->draft.proxy_step;
  r.state_ns[at] = nowNs();
  if (args != nullptr && args->proxy_step.trans_size != 0) r.trans_bytes = args->proxy_step.trans_size;
}

}  // namespace commtrace::plugin
