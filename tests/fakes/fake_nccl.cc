// A stand-in libnccl.so.2 for testing the preload face's wrappers without a GPU. It exports
// the public entry points the wrappers cover the way NCCL does (a weak ncclX aliasing a
// strong pncclX), keeps communicators as plain structs and succeeds at everything, so a
// program linked against it runs its collectives through libcommtrace.so's wrappers.
//
// Read when a communicator is created, so one process can hold communicators set up
// differently:
//   FAKE_NCCL_RESULT=<n>       its collective and p2p calls return n instead of ncclSuccess
//                              (group calls: read once per process)
//   FAKE_NCCL_INIT_RESULT=<n>  the creating call returns n; 7 (ncclInProgress) makes a
//                              non-blocking communicator, whose queries (ncclCommCount,
//                              UserRank, CuDevice) answer ncclInProgress until its first op
//   FAKE_NCCL_DEVICE=<n>       the CUDA device ncclCommCuDevice reports (default 0)
//   FAKE_NCCL_PLUGIN=5|4       plays NCCL's side of the profiler plugin named by
//                              NCCL_PROFILER_PLUGIN, bound as ncclProfiler_v5 or _v4: init
//                              per communicator, then per op on the caller's thread
//                              CollApi/P2pApi (v5) around one Coll/P2p event (skipped for a
//                              single-rank communicator, as NCCL does), finalize at destroy
//   FAKE_NCCL_CE_FUNCS=<f,..>  funcs ("AllGather", ...) run as 2.28 copy-engine collectives:
//                              no profiler event at all
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "interpose/nccl_api.h"
#include "nccl-plugin/profiler_abi.h"

namespace {

using namespace commtrace::nccl_api;
namespace prof = commtrace::nccl;

// NCCL's seqNumber slots: per communicator and func.

struct Plugin {
  int version = 0;  // 5 or 4; 0: none
  const prof::ProfilerV5* v5 = nullptr;
  const prof::ProfilerV4* v4 = nullptr;
};

}  // namespace

struct commtrace::nccl_api::Comm {
  int n_ranks;
  int rank;
  int device;
  uint64_t hash;  // what NCCL gives the plugin as the comm id
  Result op_result;
  bool ready;
  Plugin plugin;
  void* context = nullptr;  // the plugin's, from its init
  std::string ce_funcs;
  uint64_t seq[kFuncCount] = {};
};

namespace {

int envInt(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && value[0] != '\0' ? std::atoi(value) : fallback;
}

// As NCCL's descriptors name it: ncclUint8 and anything unknown as "Unknown".
const char* typeName(DataType datatype) {
  const DatatypeInfo* d = datatypeByValue(datatype);
  return d != nullptr ? d->descr_name.data() : kUnknownName.data();
}

Plugin loadPlugin() {
  Plugin p;
  p.version = envInt("FAKE_NCCL_PLUGIN", 0);
  const char* path = std::getenv("NCCL_PROFILER_PLUGIN");
  if (p.version == 0 || path == nullptr) return Plugin{};
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);  // NCCL's flags
  if (handle == nullptr) {
    std::fprintf(stderr, "fake nccl: cannot load %s: %s\n", path, dlerror());
    return Plugin{};
  }
  if (p.version == 4) p.v4 = static_cast<const prof::ProfilerV4*>(dlsym(handle, "ncclProfiler_v4"));
  else p.v5 = static_cast<const prof::ProfilerV5*>(dlsym(handle, "ncclProfiler_v5"));
  if (p.v4 == nullptr && p.v5 == nullptr) return Plugin{};
  return p;
}

int g_mask = 0;  // NCCL's one process-wide activation mask

uint64_t hashOf(const void* bytes, size_t n, uint64_t salt) {
  uint64_t h = 1469598103934665603ull ^ salt;
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<const unsigned char*>(bytes)[i]) * 1099511628211ull;
  return h | 1;  // never 0
}

Result newComm(CommHandle* out, int n_ranks, int rank, int device, uint64_t hash) {
  if (out == nullptr || n_ranks <= 0 || rank < 0 || rank >= n_ranks) return kInvalidArgument;
  const Result init_result = static_cast<Result>(envInt("FAKE_NCCL_INIT_RESULT", kSuccess));
  if (init_result != kSuccess && init_result != kInProgress) return init_result;
  auto* comm = new Comm{n_ranks, rank, device, hash, static_cast<Result>(envInt("FAKE_NCCL_RESULT", kSuccess)),
                        init_result == kSuccess, loadPlugin()};
  const char* ce = std::getenv("FAKE_NCCL_CE_FUNCS");
  comm->ce_funcs = std::string(",") + (ce != nullptr ? ce : "") + ",";
  // NCCL opens the plugin inside the init (initTransportsRank), on the calling thread.
  if (comm->plugin.v5 != nullptr) {
    comm->plugin.v5->init(&comm->context, hash, &g_mask, "fake", 1, n_ranks, rank, nullptr);
  } else if (comm->plugin.v4 != nullptr) {
    comm->plugin.v4->init(&comm->context, &g_mask, "fake", hash, 1, n_ranks, rank, nullptr);
  }
  *out = comm;
  return init_result;
}

// ---- the plugin's events for one op ----

struct OpEvents {
  const char* api_func;  // "AllReduce", or the call a piece belongs to ("AlltoAll")
  const char* func;      // the Coll/P2p func
  bool is_p2p;
  Func seq_slot;
  size_t count;
  DataType datatype;
  int root_or_peer;
  void* stream;
};

// The Coll task NCCL 2.27+ builds: AllGather and Broadcast rewritten to a byte count of ncclInt8.
prof::CollV4 collTask(Comm& comm, const OpEvents& op) {
  const bool in_bytes = op.seq_slot == Func::kAllGather || op.seq_slot == Func::kBroadcast;
  const DatatypeInfo* type = datatypeByValue(op.datatype);
  const size_t count = in_bytes && type != nullptr ? op.count * type->size : op.count;
  return prof::CollV4{comm.seq[static_cast<int>(op.seq_slot)]++, op.func, nullptr, nullptr, count, op.root_or_peer,
                      in_bytes ? kDatatypes[kInt8].descr_name.data() : typeName(op.datatype), 0, 8, "RING", "SIMPLE"};
}

void* start(Comm& comm, prof::EventDescrV5& d) {
  void* handle = nullptr;
  comm.plugin.v5->start_event(comm.context, &handle, &d);
  return handle;
}

void playV5(Comm& comm, const OpEvents& op) {
  prof::EventDescrV5 api{};
  api.type = op.is_p2p ? prof::kP2pApi : prof::kCollApi;
  if (op.is_p2p) {
    api.u.p2p_api = prof::P2pApiV5{op.api_func, op.count, typeName(op.datatype), op.stream, false};
  } else {
    api.u.coll_api = prof::CollApiV5{op.api_func, op.count, typeName(op.datatype), op.root_or_peer, op.stream, false};
  }
  void* api_handle = start(comm, api);
  if (comm.n_ranks > 1) {  // NCCL runs single-rank collectives as a copy, with no Coll event
    prof::EventDescrV5 task{};
    task.parent_obj = api_handle;
    if (op.is_p2p) {
      task.type = prof::kP2p;
      task.u.p2p.v4 = prof::P2pV4{op.func, nullptr, typeName(op.datatype), op.count, op.root_or_peer, 0};
    } else {
      task.type = prof::kColl;
      task.u.coll.v4 = collTask(comm, op);
    }
    comm.plugin.v5->stop_event(start(comm, task));
  }
  comm.plugin.v5->stop_event(api_handle);
}

void playV4(Comm& comm, const OpEvents& op) {
  if (comm.n_ranks == 1) return;
  prof::EventDescrV4 task{};
  if (op.is_p2p) {
    task.type = prof::kP2p;
    task.u.p2p = prof::P2pV4{op.func, nullptr, typeName(op.datatype), op.count, op.root_or_peer, 0};
  } else {
    task.type = prof::kColl;
    task.u.coll = collTask(comm, op);
  }
  void* handle = nullptr;
  comm.plugin.v4->start_event(comm.context, &handle, &task);
  comm.plugin.v4->stop_event(handle);
}

void play(Comm& comm, const OpEvents& op) {
  if (comm.ce_funcs.find(std::string(",") + op.api_func + ",") != std::string::npos) return;  // copy-engine: no event
  if (comm.plugin.v5 != nullptr) playV5(comm, op);
  if (comm.plugin.v4 != nullptr) playV4(comm, op);
}

// What every op does: become ready (a non-blocking init completes before use), check, play.
Result runOp(CommHandle comm, const OpEvents& op) {
  if (comm == nullptr) return kInvalidArgument;
  comm->ready = true;
  if (comm->op_result != kSuccess) return comm->op_result;
  if (comm->plugin.version != 0 && op.count > 0) play(*comm, op);
  return kSuccess;
}

Result coll(CommHandle comm, Func func, size_t count, DataType datatype, int root, void* stream) {
  const char* name = funcName(func).data();
  return runOp(comm, OpEvents{name, name, false, func, count, datatype, root, stream});
}

Result p2p(CommHandle comm, const char* api, bool is_recv, size_t count, DataType datatype, int peer, void* stream) {
  return runOp(comm, OpEvents{api, is_recv ? "Recv" : "Send", true, is_recv ? Func::kRecv : Func::kSend, count, datatype, peer,
                              stream});
}

// AlltoAll, Gather and Scatter: the per-peer pieces NCCL 2.28 runs them as.
Result pieces(CommHandle comm, const char* api, size_t count, DataType datatype, int root, void* stream) {
  if (comm == nullptr) return kInvalidArgument;
  comm->ready = true;
  if (comm->op_result != kSuccess) return comm->op_result;
  const bool all = std::strcmp(api, "AlltoAll") == 0, gather = std::strcmp(api, "Gather") == 0;
  for (int r = 0; r < comm->n_ranks; ++r) {
    if (all || (!gather && comm->rank == root)) p2p(comm, api, false, count, datatype, r, stream);
    if (all || (gather && comm->rank == root)) p2p(comm, api, true, count, datatype, r, stream);
  }
  if (!all) p2p(comm, api, !gather, count, datatype, root, stream);
  return kSuccess;
}

Result query(const CommHandle comm, int* out, int value) {
  if (comm == nullptr || out == nullptr) return kInvalidArgument;
  if (!comm->ready) return kInProgress;
  *out = value;
  return kSuccess;
}

Result groupResult() {
  static const Result result = static_cast<Result>(envInt("FAKE_NCCL_RESULT", kSuccess));
  return result;
}

}  // namespace

#define FAKE_NCCL_ALIAS(name) __attribute__((weak, alias("p" #name)))

extern "C" {

Result pncclGetVersion(int* version) {
  *version = 22809;
  return kSuccess;
}
Result ncclGetVersion(int*) FAKE_NCCL_ALIAS(ncclGetVersion);

Result pncclGetUniqueId(UniqueId* id) {
  std::memset(id, 0x5a, sizeof *id);
  return kSuccess;
}
Result ncclGetUniqueId(UniqueId*) FAKE_NCCL_ALIAS(ncclGetUniqueId);

const char* pncclGetErrorString(Result result) { return result == kSuccess ? "no error" : "fake error"; }
const char* ncclGetErrorString(Result) FAKE_NCCL_ALIAS(ncclGetErrorString);

Result pncclCommInitRank(CommHandle* comm, int n_ranks, UniqueId id, int rank) {
  return newComm(comm, n_ranks, rank, envInt("FAKE_NCCL_DEVICE", 0), hashOf(&id, sizeof id, 0));
}
FAKE_NCCL_ALIAS(ncclCommInitRank) Result ncclCommInitRank(CommHandle*, int, UniqueId, int);

Result pncclCommInitRankConfig(CommHandle* comm, int n_ranks, UniqueId id, int rank, Config*) {
  return pncclCommInitRank(comm, n_ranks, id, rank);
}
FAKE_NCCL_ALIAS(ncclCommInitRankConfig) Result ncclCommInitRankConfig(CommHandle*, int, UniqueId, int, Config*);

Result pncclCommInitRankScalable(CommHandle* comm, int n_ranks, int rank, int n_ids, UniqueId* ids, Config*) {
  if (n_ids < 1 || ids == nullptr) return kInvalidArgument;
  return pncclCommInitRank(comm, n_ranks, ids[0], rank);
}
FAKE_NCCL_ALIAS(ncclCommInitRankScalable)
Result ncclCommInitRankScalable(CommHandle*, int, int, int, UniqueId*, Config*);

Result pncclCommInitAll(CommHandle* comms, int n_devices, const int* devices) {
  if (comms == nullptr || n_devices <= 0) return kInvalidArgument;
  for (int d = 0; d < n_devices; ++d) {
    const Result r = newComm(&comms[d], n_devices, d, devices != nullptr ? devices[d] : d, 0xA11);
    if (r != kSuccess) return r;
  }
  return kSuccess;
}
FAKE_NCCL_ALIAS(ncclCommInitAll) Result ncclCommInitAll(CommHandle*, int, const int*);

// The new communicator keeps the parent's size and the caller's rank.
Result pncclCommSplit(CommHandle comm, int color, int /*key*/, CommHandle* new_comm, Config*) {
  if (comm == nullptr || new_comm == nullptr) return kInvalidArgument;
  if (color == kSplitNoColor) {
    *new_comm = nullptr;
    return kSuccess;
  }
  return newComm(new_comm, comm->n_ranks, comm->rank, comm->device, comm->hash * 31 + static_cast<uint64_t>(color));
}
FAKE_NCCL_ALIAS(ncclCommSplit) Result ncclCommSplit(CommHandle, int, int, CommHandle*, Config*);

Result pncclCommShrink(CommHandle comm, int*, int exclude_count, CommHandle* new_comm, Config*, int) {
  if (comm == nullptr || new_comm == nullptr || exclude_count < 0 || exclude_count >= comm->n_ranks) {
    return kInvalidArgument;
  }
  const int n = comm->n_ranks - exclude_count;
  return newComm(new_comm, n, comm->rank % n, comm->device, comm->hash * 37 + 1);
}
FAKE_NCCL_ALIAS(ncclCommShrink) Result ncclCommShrink(CommHandle, int*, int, CommHandle*, Config*, int);

Result pncclCommDestroy(CommHandle comm) {
  if (comm == nullptr) return kInvalidArgument;
  if (comm->plugin.v5 != nullptr) comm->plugin.v5->finalize(comm->context);
  if (comm->plugin.v4 != nullptr) comm->plugin.v4->finalize(comm->context);
  delete comm;
  return kSuccess;
}
FAKE_NCCL_ALIAS(ncclCommDestroy) Result ncclCommDestroy(CommHandle);

Result pncclCommAbort(CommHandle comm) { return pncclCommDestroy(comm); }
FAKE_NCCL_ALIAS(ncclCommAbort) Result ncclCommAbort(CommHandle);

Result pncclCommFinalize(CommHandle comm) { return comm != nullptr ? kSuccess : kInvalidArgument; }
FAKE_NCCL_ALIAS(ncclCommFinalize) Result ncclCommFinalize(CommHandle);

Result pncclCommCount(const CommHandle comm, int* count) { return query(comm, count, comm ? comm->n_ranks : 0); }
FAKE_NCCL_ALIAS(ncclCommCount) Result ncclCommCount(const CommHandle, int*);

Result pncclCommUserRank(const CommHandle comm, int* rank) { return query(comm, rank, comm ? comm->rank : 0); }
FAKE_NCCL_ALIAS(ncclCommUserRank) Result ncclCommUserRank(const CommHandle, int*);

Result pncclCommCuDevice(const CommHandle comm, int* device) { return query(comm, device, comm ? comm->device : 0); }
FAKE_NCCL_ALIAS(ncclCommCuDevice) Result ncclCommCuDevice(const CommHandle, int*);

Result pncclAllReduce(const void*, void*, size_t count, DataType datatype, RedOp, CommHandle comm, Stream stream) {
  return coll(comm, Func::kAllReduce, count, datatype, 0, stream);
}
FAKE_NCCL_ALIAS(ncclAllReduce)
Result ncclAllReduce(const void*, void*, size_t, DataType, RedOp, CommHandle, Stream);

Result pncclBroadcast(const void*, void*, size_t count, DataType datatype, int root, CommHandle comm, Stream stream) {
  return coll(comm, Func::kBroadcast, count, datatype, root, stream);
}
FAKE_NCCL_ALIAS(ncclBroadcast)
Result ncclBroadcast(const void*, void*, size_t, DataType, int, CommHandle, Stream);

// As NCCL does, through the public (interposable) entry point.
Result pncclBcast(void* buff, size_t count, DataType datatype, int root, CommHandle comm, Stream stream) {
  return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}
FAKE_NCCL_ALIAS(ncclBcast) Result ncclBcast(void*, size_t, DataType, int, CommHandle, Stream);

Result pncclReduce(const void*, void*, size_t count, DataType datatype, RedOp, int root, CommHandle comm,
                   Stream stream) {
  return coll(comm, Func::kReduce, count, datatype, root, stream);
}
FAKE_NCCL_ALIAS(ncclReduce)
Result ncclReduce(const void*, void*, size_t, DataType, RedOp, int, CommHandle, Stream);

Result pncclAllGather(const void*, void*, size_t count, DataType datatype, CommHandle comm, Stream stream) {
  return coll(comm, Func::kAllGather, count, datatype, 0, stream);
}
FAKE_NCCL_ALIAS(ncclAllGather) Result ncclAllGather(const void*, void*, size_t, DataType, CommHandle, Stream);

Result pncclReduceScatter(const void*, void*, size_t count, DataType datatype, RedOp, CommHandle comm,
                          Stream stream) {
  return coll(comm, Func::kReduceScatter, count, datatype, 0, stream);
}
FAKE_NCCL_ALIAS(ncclReduceScatter)
Result ncclReduceScatter(const void*, void*, size_t, DataType, RedOp, CommHandle, Stream);

Result pncclAlltoAll(const void*, void*, size_t count, DataType datatype, CommHandle comm, Stream stream) {
  return pieces(comm, "AlltoAll", count, datatype, 0, stream);
}
FAKE_NCCL_ALIAS(ncclAlltoAll) Result ncclAlltoAll(const void*, void*, size_t, DataType, CommHandle, Stream);

Result pncclGather(const void*, void*, size_t count, DataType datatype, int root, CommHandle comm, Stream stream) {
  return pieces(comm, "Gather", count, datatype, root, stream);
}
FAKE_NCCL_ALIAS(ncclGather) Result ncclGather(const void*, void*, size_t, DataType, int, CommHandle, Stream);

Result pncclScatter(const void*, void*, size_t count, DataType datatype, int root, CommHandle comm, Stream stream) {
  return pieces(comm, "Scatter", count, datatype, root, stream);
}
FAKE_NCCL_ALIAS(ncclScatter) Result ncclScatter(const void*, void*, size_t, DataType, int, CommHandle, Stream);

// NCCL wraps each send and receive in a group of its own, through the public entry points.
Result pncclSend(const void*, size_t count, DataType datatype, int peer, CommHandle comm, Stream stream) {
  ncclGroupStart();
  const Result result = p2p(comm, "Send", false, count, datatype, peer, stream);
  ncclGroupEnd();
  return result;
}
FAKE_NCCL_ALIAS(ncclSend) Result ncclSend(const void*, size_t, DataType, int, CommHandle, Stream);

Result pncclRecv(void*, size_t count, DataType datatype, int peer, CommHandle comm, Stream stream) {
  ncclGroupStart();
  const Result result = p2p(comm, "Recv", true, count, datatype, peer, stream);
  ncclGroupEnd();
  return result;
}
FAKE_NCCL_ALIAS(ncclRecv) Result ncclRecv(void*, size_t, DataType, int, CommHandle, Stream);

Result pncclGroupStart() { return groupResult(); }
FAKE_NCCL_ALIAS(ncclGroupStart) Result ncclGroupStart();

Result pncclGroupEnd() { return groupResult(); }
FAKE_NCCL_ALIAS(ncclGroupEnd) Result ncclGroupEnd();

}  // extern "C"
