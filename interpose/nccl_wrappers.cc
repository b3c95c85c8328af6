// The public NCCL entry points, as libcommtrace.so exports them when preloaded. NCCL
// exports each as a weak ncclX aliasing a strong pncclX; each wrapper forwards to the
// next definition (real_symbol.h), returns exactly its result, and hands what it saw to
// nccl_recording.h. One forwarding template; four call shapes (ops, creation,
// destruction, groups) differ only in what they record.
//
// A wrapper only forwards when recording is off (COMMTRACE_NCCL_API=0) or when it is
// called from inside another wrapped call on the same thread: NCCL calls its own public
// API (ncclBcast calls ncclBroadcast, ncclSend/Recv and ncclAlltoAll wrap themselves in
// ncclGroupStart/End, ncclCommInitAll groups its inits), and those calls reach us through
// the PLT too. The plugin witness's `armed` flag is that nesting guard.
#include "core/api_witness.h"
#include "core/export.h"
#include "core/real_symbol.h"
#include "core/settings.h"
#include "interpose/nccl_api.h"
#include "interpose/nccl_recording.h"
#include "ringbuffer/ringbuffer.h"

namespace commtrace::interpose {
namespace {

using namespace nccl_api;

// The one forwarding path of every wrapper. A watch says what a call shape records:
// before() runs before the call (only when recording), after() once it returned. The
// witness is armed around the call: it tells whether the plugin face saw the call, and
// it is the nesting guard.
template <class Fn, class Watch, class... Args>
Result forward(RealFunction<Fn>& real, Watch&& watch, Args... args) {
  Fn* const fn = real.get();
  if (fn == nullptr) [[unlikely]] return noDefinition(real.name());
  ApiWitness& witness = tl_api_witness;
  if (witness.armed || !settings().nccl_api) return fn(args...);
  watch.before();
  witness.armed = true;
  witness.seen = false;
  CallOutcome outcome;
  outcome.cpu_start_ns = nowNs();
  const Result result = fn(args...);
  witness.armed = false;
  outcome.plugin_saw = witness.seen;
  outcome.plugin_comm_id = witness.plugin_comm_id;
  watch.after(real.name(), outcome, result);
  return result;
}

struct OpWatch {
  OpCall call;
  void before() {}
  void after(const char* api, const CallOutcome& outcome, Result result) {
    if (succeeded(result)) [[likely]] {
      afterOp(call, outcome);
    } else {
      recordFailedCall(api, call, outcome, result);
    }
  }
};

template <class Describe>
struct CreateWatch {
  Describe describe;  // -> NewComms, before the call: split counters advance on every call
  NewComms comms{};
  void before() {
    comms = describe();
    beforeCreate(comms);
  }
  void after(const char* api, const CallOutcome& outcome, Result result) { afterCreate(api, comms, outcome, result); }
};

struct EndWatch {
  CommHandle comm;
  bool ends_comm;  // Destroy/Abort; Finalize is followed by Destroy
  EndingComm ending{};
  void before() { ending = endingComm(comm); }
  void after(const char* api, const CallOutcome& outcome, Result result) {
    afterEnd(api, ending, ends_comm, outcome, result);
  }
};

struct GroupWatch {
  void (*after_group)(const CallOutcome&, Result);
  void before() {}
  void after(const char*, const CallOutcome& outcome, Result result) { after_group(outcome, result); }
};

template <class Describe>
CreateWatch<Describe> creating(Describe describe) {
  return CreateWatch<Describe>{describe};
}

OpWatch op(const void* caller, OpFunc func, CommHandle comm, size_t count, DataType datatype, int root_or_peer, Stream stream) {
  return OpWatch{OpCall{func, comm, count, datatype, root_or_peer, stream, caller}};
}

}  // namespace
}  // namespace commtrace::interpose

namespace ci = commtrace::interpose;
using ci::OpFunc;

// The definition this wrapper forwards to, resolved at its first call.
#define CT_REAL(name)                                     \
  static constinit commtrace::RealFunction<decltype(name)> real{ \
      commtrace::SymbolSource{#name, "p" #name, na::kNcclSonames}}

// ---- communicators ----

COMMTRACE_EXPORT na::Result ncclCommInitRank(na::CommHandle* comm, int n_ranks, na::UniqueId id, int rank) {
  CT_REAL(ncclCommInitRank);
  auto comms = [&] { return ci::commsOfInitRank(comm, n_ranks, id, rank); };
  return ci::forward(real, ci::creating(comms), comm, n_ranks, id, rank);
}

COMMTRACE_EXPORT na::Result ncclCommInitRankConfig(na::CommHandle* comm, int n_ranks, na::UniqueId id, int rank,
                                            na::Config* config) {
  CT_REAL(ncclCommInitRankConfig);
  auto comms = [&] { return ci::commsOfInitRank(comm, n_ranks, id, rank); };
  return ci::forward(real, ci::creating(comms), comm, n_ranks, id, rank, config);
}

COMMTRACE_EXPORT na::Result ncclCommInitRankScalable(na::CommHandle* comm, int n_ranks, int rank, int n_ids,
                                              na::UniqueId* ids, na::Config* config) {
  CT_REAL(ncclCommInitRankScalable);
  auto comms = [&] { return ci::commsOfInitRankScalable(comm, n_ranks, rank, n_ids, ids); };
  return ci::forward(real, ci::creating(comms), comm, n_ranks, rank, n_ids, ids, config);
}

COMMTRACE_EXPORT na::Result ncclCommInitAll(na::CommHandle* comms, int n_devices, const int* devices) {
  CT_REAL(ncclCommInitAll);
  auto made = [&] { return ci::commsOfInitAll(comms, n_devices, devices); };
  return ci::forward(real, ci::creating(made), comms, n_devices, devices);
}

COMMTRACE_EXPORT na::Result ncclCommSplit(na::CommHandle comm, int color, int key, na::CommHandle* new_comm,
                                   na::Config* config) {
  CT_REAL(ncclCommSplit);
  auto comms = [&] { return ci::commsOfSplit(comm, new_comm, color); };
  return ci::forward(real, ci::creating(comms), comm, color, key, new_comm, config);
}

COMMTRACE_EXPORT na::Result ncclCommShrink(na::CommHandle comm, int* exclude_ranks, int exclude_count,
                                    na::CommHandle* new_comm, na::Config* config, int shrink_flags) {
  CT_REAL(ncclCommShrink);
  auto comms = [&] { return ci::commsOfShrink(comm, new_comm, exclude_count); };
  return ci::forward(real, ci::creating(comms), comm, exclude_ranks, exclude_count, new_comm, config, shrink_flags);
}

COMMTRACE_EXPORT na::Result ncclCommDestroy(na::CommHandle comm) {
  CT_REAL(ncclCommDestroy);
  return ci::forward(real, ci::EndWatch{comm, /*ends_comm=*/true}, comm);
}

COMMTRACE_EXPORT na::Result ncclCommAbort(na::CommHandle comm) {
  CT_REAL(ncclCommAbort);
  return ci::forward(real, ci::EndWatch{comm, /*ends_comm=*/true}, comm);
}

COMMTRACE_EXPORT na::Result ncclCommFinalize(na::CommHandle comm) {
  CT_REAL(ncclCommFinalize);
  return ci::forward(real, ci::EndWatch{comm, /*ends_comm=*/false}, comm);
}

// ---- collectives and point-to-point (root 0 where NCCL reports 0 for an unrooted func) ----

COMMTRACE_EXPORT na::Result ncclAllReduce(const void* send, void* recv, size_t count, na::DataType datatype, na::RedOp op,
                                   na::CommHandle comm, na::Stream stream) {
  CT_REAL(ncclAllReduce);
  return ci::forward(real, ci::op(__builtin_return_address(0), OpFunc::kAllReduce, comm, count, datatype, 0, stream), send, recv, count, datatype,
                     op, comm, stream);
}

COMMTRACE_EXPORT na::Result ncclBroadcast(const void* send, void* recv, size_t count, na::DataType datatype, int root,
                                   na::CommHandle comm, na::Stream stream) {
  CT_REAL(ncclBroadcast);
  return ci::forward(real, ci::op(__builtin_return_address(0), OpFunc::kBroadcast, comm, count, datatype, root, stream), send, recv, count,
                     datatype, root, comm, stream);
}

COMMTRACE_EXPORT na::Result ncclBcast(void* buff, size_t count, na::DataType datatype, int root, na::CommHandle comm,
                               na::Stream stream) {
  CT_REAL(ncclBcast);
  return ci::forward(real, ci::op(__builtin_return_address(0), OpFunc::kBroadcast, comm, count, datatype, root, stream), buff, count, datatype,
                     root, comm, stream);
}

COMMTRACE_EXPORT na::Result ncclReduce(const void* send, void* recv, size_t count, na::DataType datatype, na::RedOp op,
                                int root, na::CommHandle comm, na::Stream stream) {
  CT_REAL(ncclReduce);
  return ci::forward(real, ci::op(__builtin_return_address(0), OpFunc::kReduce, comm, count, datatype, root, stream), send, recv, count, datatype,
                     op, root, comm, stream);
}

COMMTRACE_EXPORT na::Result ncclAllGather(const void* send, void* recv, size_t send_count, na::DataType datatype,
                                   na::CommHandle comm, na::Stream stream) {
  CT_REAL(ncclAllGather);
  return ci::forward(real, ci::op(__builtin_return_address(0), OpFunc::kAllGather, comm, send_count, datatype, 0, stream), send, recv, send_count,
                     datatype, comm, stream);
}

COMMTRACE_EXPORT na::Result ncclReduceScatter(const void* send, void* recv, size_t recv_count, na::DataType datatype,
                                       na::RedOp op, na::CommHandle comm, na::Stream stream) {
  CT_REAL(ncclReduceScatter);
  return ci::forward(real, ci::op(__builtin_return_address(0), OpFunc::kReduceScatter, comm, recv_count, datatype, 0, stream), send, recv,
                     recv_count, datatype, op, comm, stream);
}

COMMTRACE_EXPORT na::Result ncclAlltoAll(const void* send, void* recv, size_t count, na::DataType datatype,
                                  na::CommHandle comm, na::Stream stream) {
  CT_REAL(ncclAlltoAll);
  return ci::forward(real, ci::op(__builtin_return_address(0), OpFunc::kAlltoAll, comm, count, datatype, 0, stream), send, recv, count, datatype,
                     comm, stream);
}

COMMTRACE_EXPORT na::Result ncclGather(const void* send, void* recv, size_t count, na::DataType datatype, int root,
                                na::CommHandle comm, na::Stream stream) {
  CT_REAL(ncclGather);
  return ci::forward(real, ci::op(__builtin_return_address(0), OpFunc::kGather, comm, count, datatype, root, stream), send, recv, count, datatype,
                     root, comm, stream);
}

COMMTRACE_EXPORT na::Result ncclScatter(const void* send, void* recv, size_t count, na::DataType datatype, int root,
                                 na::CommHandle comm, na::Stream stream) {
  CT_REAL(ncclScatter);
  return ci::forward(real, ci::op(__builtin_return_address(0), OpFunc::kScatter, comm, count, datatype, root, stream), send, recv, count,
                     datatype, root, comm, stream);
}

COMMTRACE_EXPORT na::Result ncclSend(const void* send, size_t count, na::DataType datatype, int peer, na::CommHandle comm,
                              na::Stream stream) {
  CT_REAL(ncclSend);
  return ci::forward(real, ci::op(__builtin_return_address(0), OpFunc::kSend, comm, count, datatype, peer, stream), send, count, datatype, peer,
                     comm, stream);
}

COMMTRACE_EXPORT na::Result ncclRecv(void* recv, size_t count, na::DataType datatype, int peer, na::CommHandle comm,
                              na::Stream stream) {
  CT_REAL(ncclRecv);
  return ci::forward(real, ci::op(__builtin_return_address(0), OpFunc::kRecv, comm, count, datatype, peer, stream), recv, count, datatype, peer,
                     comm, stream);
}

// ---- groups ----

COMMTRACE_EXPORT na::Result ncclGroupStart() {
  CT_REAL(ncclGroupStart);
  return ci::forward(real, ci::GroupWatch{&ci::afterGroupStart});
}

COMMTRACE_EXPORT na::Result ncclGroupEnd() {
  CT_REAL(ncclGroupEnd);
  return ci::forward(real, ci::GroupWatch{&ci::afterGroupEnd});
}
