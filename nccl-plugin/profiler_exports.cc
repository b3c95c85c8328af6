// The ncclProfiler_v4 ... v7 symbols NCCL looks for (newest first). One templated adapter
// per callback reads each version's descriptor into the version-free views of
// event_recorder.h; the versions differ only in where fields sit and which events exist.
// v7 is read as v7 only when NVIDIA NCCL 2.31+ loaded us (loaded_nccl.h), else as v6.
#include <atomic>
#include <cstdio>
#include <mutex>

#include "core/api_witness.h"
#include "core/gpu_use.h"
#include "nccl-plugin/event_recorder.h"
#include "nccl-plugin/loaded_nccl.h"
#include "nccl-plugin/profiler_abi.h"

namespace commtrace::plugin {
namespace {

using namespace nccl;

// The v7 user tag, whatever the version (0 before v7).
template <class T>
uint64_t userTag(const T& member) {
  if constexpr (requires { member.user_tag; }) {
    return member.user_tag;
  } else {
    return 0;
  }
}

template <class Descr>
constexpr bool kHasApiEvents = !std::is_same_v<Descr, EventDescrV4>;

template <class Descr>
CollView collView(const Descr& d) {
  const CollV4& c = core(d.u.coll);
  return CollView{.api_parent = kHasApiEvents<Descr> ? d.parent_obj : nullptr,
                  .seq_number = c.seq_number,
                  .func = c.func,
                  .count = c.count,
                  .datatype = c.datatype,
                  .root = c.root,
                  .n_channels = c.n_channels,
                  .n_warps = c.n_warps,
                  .algo = c.algo,
                  .proto = c.proto,
                  .user_tag = userTag(d.u.coll)};
}

template <class Descr>
P2pView p2pView(const Descr& d) {
  const P2pV4& p = core(d.u.p2p);
  return P2pView{.api_parent = kHasApiEvents<Descr> ? d.parent_obj : nullptr,
                 .func = p.func,
                 .count = p.count,
                 .datatype = p.datatype,
                 .peer = p.peer,
                 .n_channels = p.n_channels,
                 .channels_known = kHasApiEvents<Descr>,  // NCCL's v4 adapter never copies it
                 .user_tag = userTag(d.u.p2p)};
}

template <class Descr>
void* startTyped(CommContext& comm, const Descr& d) {
  switch (static_cast<uint64_t>(d.type)) {
    case kColl: return startColl(comm, collView(d));
    case kP2p: return startP2p(comm, p2pView(d));
    case kKernelCh: return startKernelCh(d.parent_obj, d.u.kernel_ch.channel_id, d.u.kernel_ch.p_timer);
    case kProxyOp: return startProxyOp(comm, d.parent_obj, d.u.proxy_op);
    case kProxyStep: return startProxyStep(d.parent_obj, d.u.proxy_step.step);
    default: break;
  }
  if constexpr (kHasApiEvents<Descr>) {
    switch (static_cast<uint64_t>(d.type)) {
      case kGroupApi: return startGroupApi(comm, d.u.group_api.group_depth);
      case kCollApi: {
        const CollApiV5& a = core(d.u.coll_api);
        return startApi(comm, ApiView{false, a.func, a.count, a.datatype, a.root, a.stream, a.graph_captured,
                                      userTag(d.u.coll_api)});
      }
      case kP2pApi: {
        const P2pApiV5& a = core(d.u.p2p_api);
        return startApi(comm, ApiView{true, a.func, a.count, a.datatype, -1, a.stream, a.graph_captured,
                                      userTag(d.u.p2p_api)});
      }
      default: break;
    }
  }
  return nullptr;  // Group, ProxyCtrl, NetPlugin, KernelLaunch, CE and KernelPhase: not tracked
}

template <class Descr>
Result startEvent(void* context, void** handle, Descr* descr) {
  if (handle == nullptr) return kSuccess;
  *handle = nullptr;  // always written: some NCCL adapter paths read it whatever we return
  if (context == nullptr || descr == nullptr) return kSuccess;
  *handle = startTyped(*static_cast<CommContext*>(context), *descr);
  return kSuccess;
}

// Whether the v7 caller's descriptors have NVIDIA NCCL 2.31's layout (loaded_nccl.h):
// decided at the first v7 init, before any v7 event; until then and otherwise, v7
// descriptors are read as v6, which every v7 layout begins with.
std::atomic<bool> g_v7_layout_is_nvidia{false};

Result startEventV7(void* context, void** handle, EventDescrV7* descr) {
  if (g_v7_layout_is_nvidia.load(std::memory_order_relaxed)) return startEvent(context, handle, descr);
  return startEvent(context, handle, reinterpret_cast<EventDescrV6*>(descr));
}

Result stop(void* handle) {
  stopEvent(handle);
  return kSuccess;
}

Result recordState(void* handle, EventState state, StateArgs* args) {
  recordEventState(handle, state, args);
  return kSuccess;
}

Result finalize(void* context) {
  finalizeComm(static_cast<CommContext*>(context));
  return kSuccess;
}

Result initWith(void** context, uint64_t comm_id, int* mask, const char* comm_name, int n_nodes, int n_ranks,
                int rank, bool has_api_events) {
  if (context == nullptr) return kInvalidArgument;
  commtrace::noteGpuInUse();  // NCCL has a GPU: the CUPTI face may attach
  notePluginApiEvents(has_api_events);
  *context = initComm(comm_id, mask, comm_name, n_nodes, n_ranks, rank, has_api_events);
  if (*context != nullptr) return kSuccess;
  std::fprintf(stderr, "commtrace: out of memory for communicator %016llx; NCCL continues without profiling it\n",
               static_cast<unsigned long long>(comm_id));
  return kSystemError;
}

// v4 passes the hash after the name; v5 moved it to the front and called it commId.
Result initV4(void** context, int* mask, const char* comm_name, uint64_t comm_hash, int n_nodes, int n_ranks,
              int rank, DebugLogger) {
  return initWith(context, comm_hash, mask, comm_name, n_nodes, n_ranks, rank, false);
}

Result initV5(void** context, uint64_t comm_id, int* mask, const char* comm_name, int n_nodes, int n_ranks,
              int rank, DebugLogger) {
  return initWith(context, comm_id, mask, comm_name, n_nodes, n_ranks, rank, true);
}

void decideV7Layout() {
  static std::once_flag once;
  std::call_once(once, [] {
    const LoadedNccl nccl = findLoadedNccl();
    const bool nvidia = hasNvidiaV7Layout(nccl);
    g_v7_layout_is_nvidia.store(nvidia, std::memory_order_relaxed);
    if (nvidia) return;
    if (nccl.version == 0) {
      std::fputs("commtrace: NCCL bound ncclProfiler_v7 but no ncclGetVersion was found; v7 events are read as v6 "
                 "(no user tags)\n", stderr);
    } else {
      std::fprintf(stderr, "commtrace: ncclProfiler_v7 bound by %s %d, whose v7 layout commtrace does not know; v7 "
                   "events are read as v6 (no user tags)\n", nccl.is_rccl ? "RCCL" : "NCCL", nccl.version);
    }
  });
}

Result initV7(void** context, uint64_t comm_id, int* mask, const char* comm_name, int n_nodes, int n_ranks, int rank,
              DebugLogger logger) {
  decideV7Layout();
  return initV5(context, comm_id, mask, comm_name, n_nodes, n_ranks, rank, logger);
}

template <class Table, class Init, class Descr>
constexpr Table table(Init init, Result (*start)(void*, void**, Descr*) = startEvent<Descr>) {
  return Table{"commtrace", init, start, stop, recordState, finalize};
}

}  // namespace
}  // namespace commtrace::plugin

namespace cp = commtrace::plugin;
namespace cn = commtrace::nccl;

extern "C" {
__attribute__((visibility("default"))) extern const cn::ProfilerV7 ncclProfiler_v7;
__attribute__((visibility("default"))) extern const cn::ProfilerV6 ncclProfiler_v6;
__attribute__((visibility("default"))) extern const cn::ProfilerV5 ncclProfiler_v5;
__attribute__((visibility("default"))) extern const cn::ProfilerV4 ncclProfiler_v4;
}

const cn::ProfilerV7 ncclProfiler_v7 =
    cp::table<cn::ProfilerV7, cn::InitV5, cn::EventDescrV7>(cp::initV7, cp::startEventV7);
const cn::ProfilerV6 ncclProfiler_v6 = cp::table<cn::ProfilerV6, cn::InitV5, cn::EventDescrV6>(cp::initV5);
const cn::ProfilerV5 ncclProfiler_v5 = cp::table<cn::ProfilerV5, cn::InitV5, cn::EventDescrV5>(cp::initV5);
const cn::ProfilerV4 ncclProfiler_v4 = cp::table<cn::ProfilerV4, cn::InitV4, cn::EventDescrV4>(cp::initV4);
