#include "interpose/nccl_recording.h"


#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <string_view>

#include "core/api_witness.h"
#include "core/phase_path.h"
#include "core/gpu_use.h"
#include "core/job_secret.h"
#include "core/process_identity.h"
#include "core/real_symbol.h"
#include "core/string_table.h"
#include "interpose/stack_sampler.h"
#include "ringbuffer/ringbuffer.h"

namespace commtrace::interpose {
namespace {

using namespace nccl_api;

// ---- names, interned once per process so the hot path never hashes a string ----

constinit std::atomic<StringId> g_func_ids[kFuncCount] = {};
constinit std::atomic<StringId> g_group_start_id{0}, g_group_end_id{0};
constinit std::atomic<StringId> g_datatype_ids[kDatatypeCount] = {};

StringId funcId(OpFunc func) { return internOnce(g_func_ids[static_cast<int>(func)], nccl::funcName(func)); }

// The wrapper knows the user's ncclDataType_t, so it names ncclUint8, which NCCL's
// descriptors call "Unknown".
StringId datatypeName(int datatype) {
  const DatatypeInfo* d = datatypeByValue(datatype);
  return d != nullptr ? internOnce(g_datatype_ids[datatype], d->name) : 0;
}

uint64_t bytesOf(uint64_t count, int datatype) {
  const DatatypeInfo* d = datatypeByValue(datatype);
  return d != nullptr ? count * d->size : 0;  // 0: unknown
}

// ---- NCCL's answers about a communicator ----

using CommQuery = Result(const CommHandle, int*);
constinit RealFunction<CommQuery> g_comm_count{SymbolSource{"ncclCommCount", "pncclCommCount", kNcclSonames}};
constinit RealFunction<CommQuery> g_comm_user_rank{
    SymbolSource{"ncclCommUserRank", "pncclCommUserRank", kNcclSonames}};
constinit RealFunction<CommQuery> g_comm_cu_device{
    SymbolSource{"ncclCommCuDevice", "pncclCommCuDevice", kNcclSonames}};

bool ask(RealFunction<CommQuery>& query, const void* comm, int& answer) {
  CommQuery* fn = query.get();
  int value = -1;
  if (fn == nullptr || fn(static_cast<CommHandle>(const_cast<void*>(comm)), &value) != kSuccess) return false;
  answer = value;
  return true;
}

// Cold: at creation, or at the first op of a non-blocking communicator (NCCL answers
// ncclInProgress until it is ready).
void resolveComm(CommEntry& comm) {
  int n = 0, rank = -1, device = -1;
  const bool has_n = ask(g_comm_count, comm.handle(), n) && n > 0;
  const bool has_rank = ask(g_comm_user_rank, comm.handle(), rank);
  if (ask(g_comm_cu_device, comm.handle(), device)) comm.cuda_device.store(device, std::memory_order_relaxed);
  if (has_n && comm.setRanks(n, has_rank ? rank : -1)) comm.resolved.store(true, std::memory_order_release);
}

// ---- records ----

void recordSpan(StringId api, uint64_t comm_id, uint64_t stream, uint64_t arg, const CallOutcome& outcome,
                Result result, uint64_t cpu_end_ns = nowNs()) {
  record(ApiSpanRecord{.comm_id = comm_id,
                       .stream = stream,
                       .arg = arg,
                       .cpu_start_ns = outcome.cpu_start_ns,
                       .cpu_end_ns = cpu_end_ns,
                       .name = api,
                       .result = static_cast<int32_t>(result)});
}

// Cold: who this process is in the communicator, under the id records of it carry.
void emitCommInfo(CommEntry& comm, uint32_t which, uint64_t comm_id) {
  if ((comm.info_emitted.fetch_or(which, std::memory_order_relaxed) & which) != 0) return;
  record(CommInfoRecord{.comm_id = comm_id,
                        .cpu_ns = nowNs(),
                        .n_nodes = 0,  // not known to the API
                        .n_ranks = comm.n_ranks.load(std::memory_order_relaxed),
                        .rank = comm.rank.load(std::memory_order_relaxed),
                        .global_rank = comm.global_rank.load(std::memory_order_relaxed),
                        .cuda_device = comm.cuda_device.load(std::memory_order_relaxed)});
}

// Cold: the plugin face reported this communicator under NCCL's id. Its records use that
// id, so ours do too from now on, and the plugin's communicator gets what only we know
// (global rank, CUDA device) in a CommInfo of its id, once NCCL has answered.
void learnPluginId(CommEntry& comm, uint64_t plugin_comm_id) {
  comm.plugin_comm_id.store(plugin_comm_id, std::memory_order_relaxed);
  if (comm.resolved.load(std::memory_order_acquire)) emitCommInfo(comm, CommEntry::kPluginInfo, plugin_comm_id);
}

// Who records an op the call made: the plugin (one Coll/P2p event per op, which NCCL
// skips on a single-rank communicator), or us.
bool wrapperRecords(bool plugin_saw, int32_t n_ranks) {
  if (plugin_saw) return n_ranks == 1;
  // Not seen: the plugin is not attached to this communicator, or the op is a 2.28
  // copy-engine collective (no API or Coll event at all), or the plugin is bound as v4
  // (no API events, but Coll/P2p events on NCCL <= 2.27, which has no CE collectives).
  return pluginApiEvents() != PluginApiEvents::kAbsent || n_ranks == 1;
}

// Counts one op on its communicator and, when emit, records it. Every op is counted
// whether or not we record it: a p2p op_index pairs the k-th send A->B with the k-th
// receive on B across ranks, so it must count every one, as the plugin's does. A
// collective's op_index counts every collective call; the plugin's counts those it sees,
// so where both faces record one communicator (copy-engine collectives) their indices
// differ, which is harmless: collectives are matched across ranks by (comm, func, seq).
class OpEmitter {
 public:
  OpEmitter(const OpCall& call, CommEntry& comm, uint64_t seq, const CallOutcome& outcome, bool emit)
      : call_(call), comm_(comm), seq_(seq), outcome_(outcome), emit_(emit) {
    if (emit_) {
      cpu_end_ns_ = nowNs();
      comm_id_ = comm.recordId();
      const uint32_t which = comm.plugin_comm_id.load(std::memory_order_relaxed) != 0 ? CommEntry::kPluginInfo
                                                                                       : CommEntry::kOwnInfo;
      if ((comm.info_emitted.load(std::memory_order_relaxed) & which) == 0) [[unlikely]] {
        emitCommInfo(comm, which, comm_id_);
      }
    }
  }

  void coll() {
    const uint64_t op_index = bump(comm_.coll_ops);
    if (!emit_) return;
    record(CollRecord{.comm_id = comm_id_,
                      .seq = seq_,
                      .op_index = op_index,
                      .count = call_.count,
                      .bytes = bytesOf(call_.count, call_.datatype),
                      .stream = reinterpret_cast<uint64_t>(call_.stream),
                      .cpu_start_ns = outcome_.cpu_start_ns,
                      .cpu_end_ns = cpu_end_ns_,
                      .func = funcId(call_.func),
                      .datatype = datatypeName(call_.datatype),
                      .phase_path = currentPhasePath(),  // the wrapper runs on the issuing thread
                      .root = call_.root_or_peer});
  }

  // One Send/Recv, or one piece of an AlltoAll/Gather/Scatter (parent set).
  void p2p(bool is_recv, int peer, bool piece) {
    const uint64_t op_index = bump(comm_.p2pCounter(is_recv, peer));
    if (!emit_) return;
    record(P2pRecord{.comm_id = comm_id_,
                     .op_index = op_index,
                     .count = call_.count,
                     .bytes = bytesOf(call_.count, call_.datatype),
                     .stream = reinterpret_cast<uint64_t>(call_.stream),
                     .cpu_start_ns = outcome_.cpu_start_ns,
                     .cpu_end_ns = cpu_end_ns_,
                     .func = funcId(is_recv ? OpFunc::kRecv : OpFunc::kSend),
                     .datatype = datatypeName(call_.datatype),
                     .parent_func = piece ? funcId(call_.func) : 0,
                     .peer = peer,
                     .phase_path = currentPhasePath()});
  }

  // The pieces NCCL runs the call as (self included; the report leaves those out):
  //   AlltoAll: a send to and a receive from every rank;
  //   Gather:   every rank sends to the root, the root receives from every rank;
  //   Scatter:  the root sends to every rank, every rank receives from the root.
  // Without n_ranks (NCCL has not answered yet) the pieces are unknown.
  void pieces() {
    const int n = comm_.n_ranks.load(std::memory_order_relaxed);
    const int me = comm_.rank.load(std::memory_order_relaxed);
    const int root = call_.root_or_peer;
    switch (call_.func) {
      case OpFunc::kAlltoAll:
        for (int r = 0; r < n; ++r) {
          p2p(false, r, true);
          p2p(true, r, true);
        }
        break;
      case OpFunc::kGather:
        if (me == root) {
          for (int r = 0; r < n; ++r) p2p(true, r, true);
        }
        p2p(false, root, true);
        break;
      default:  // kScatter
        if (me == root) {
          for (int r = 0; r < n; ++r) p2p(false, r, true);
        }
        p2p(true, root, true);
        break;
    }
  }

 private:
  const OpCall& call_;
  CommEntry& comm_;
  const uint64_t seq_;
  const CallOutcome& outcome_;
  const bool emit_;
  uint64_t cpu_end_ns_ = 0;
  uint64_t comm_id_ = 0;
};

void countAndRecord(const OpCall& call, CommEntry& comm, uint64_t seq, const CallOutcome& outcome, bool emit) {
  OpEmitter op(call, comm, seq, outcome, emit);
  // The shapes the report joins: collectives as one CollRecord; AlltoAll, Gather and
  // Scatter as the per-peer Send/Recv pieces NCCL runs them as, as the plugin records them
  // (tools/report/analyses/p2p_calls.h).
  switch (nccl::funcInfo(call.func).shape) {
    case FuncShape::kCollective: op.coll(); break;
    case FuncShape::kSend: op.p2p(false, call.root_or_peer, false); break;
    case FuncShape::kRecv: op.p2p(true, call.root_or_peer, false); break;
    case FuncShape::kPieces: op.pieces(); break;
  }
}

// Cold: a communicator no creation wrapper saw (made by an entry point we do not wrap).
// Its id is ours alone, not shared with other ranks, until the plugin's is learned.
CommEntry* adoptUnknownComm(const void* handle) {
  if (handle == nullptr) return nullptr;  // NCCL refuses a NULL communicator; a fake may not
  const uint64_t local[2] = {reinterpret_cast<uintptr_t>(handle), static_cast<uint64_t>(getpid())};
  const uint64_t id = commIdOfUniqueId(&local, sizeof local);
  CommEntry* comm = CommRegistry::global().addIfAbsent(handle, id);
  if (comm == nullptr) return nullptr;
  comm->global_rank.store(globalRank(), std::memory_order_relaxed);
  return comm;
}

constinit std::atomic<bool> g_registry_full_said{false};

void sayRegistryFull() {
  if (g_registry_full_said.exchange(true)) return;
  std::fprintf(stderr,
               "commtrace: more than %u live NCCL communicators; the ops of further ones are left to the profiler "
               "plugin\n",
               CommRegistry::kCapacity);
}

// ---- groups ----

constinit thread_local int tl_group_depth __attribute__((tls_model("initial-exec"))) = 0;

}  // namespace

void afterOp(const OpCall& call, const CallOutcome& outcome) {
  // NCCL discards an empty collective before numbering it (no seqNumber, no Coll event).
  if (call.count == 0 && isCollective(call.func)) return;
  CommEntry* comm = CommRegistry::global().find(call.comm);
  if (comm == nullptr) [[unlikely]] {
    comm = adoptUnknownComm(call.comm);
    if (comm == nullptr) return;
  }
  const uint64_t seq = bump(comm->calls[static_cast<int>(call.func)]);
  if (!comm->resolved.load(std::memory_order_acquire)) [[unlikely]] resolveComm(*comm);
  if (outcome.plugin_saw) {
    const bool learned = comm->plugin_comm_id.load(std::memory_order_relaxed) == outcome.plugin_comm_id &&
                         (comm->info_emitted.load(std::memory_order_relaxed) & CommEntry::kPluginInfo) != 0;
    if (!learned) [[unlikely]] learnPluginId(*comm, outcome.plugin_comm_id);
  }
  const bool emit = wrapperRecords(outcome.plugin_saw, comm->n_ranks.load(std::memory_order_relaxed));
  countAndRecord(call, *comm, seq, outcome, emit);
  const uint64_t bytes = bytesOf(call.count, call.datatype);
  if (const uint32_t weight = stackSampleDue(call.comm, static_cast<int>(call.func), bytes); weight != 0) [[unlikely]] {
    takeStackSample({.caller = call.caller,
                     .comm_id = comm->recordId(),
                     .bytes = bytes,
                     .cpu_start_ns = outcome.cpu_start_ns,
                     .func = funcId(call.func)},
                    weight);
  }
}

void recordFailedCall(const char* api, const OpCall& call, const CallOutcome& outcome, Result result) {
  const CommEntry* comm = CommRegistry::global().find(call.comm);
  recordSpan(StringTable::global().intern(api), comm != nullptr ? comm->recordId() : 0,
             reinterpret_cast<uint64_t>(call.stream), call.count, outcome, result);
}

NewComms commsOfInitRank(CommHandle* out, int n_ranks, const UniqueId& id, int rank) {
  return NewComms{.out = out,
                  .comm_id = commIdOfUniqueId(id.internal, sizeof id.internal),
                  .n_ranks = n_ranks,
                  .rank = rank,
                  .may_be_world = true,
                  .unique_id = id.internal};
}

NewComms commsOfInitRankScalable(CommHandle* out, int n_ranks, int rank, int n_ids, const UniqueId* ids) {
  // Every rank passes the same ids (NCCL spreads its bootstrap over them): the first names it.
  const uint64_t id = n_ids > 0 && ids != nullptr ? commIdOfUniqueId(ids[0].internal, sizeof ids[0].internal)
                                                  : randomCommId();
  return NewComms{.out = out, .comm_id = id, .n_ranks = n_ranks, .rank = rank, .may_be_world = true,
                  .unique_id = n_ids > 0 && ids != nullptr ? ids[0].internal : nullptr};
}

NewComms commsOfInitAll(CommHandle* out, int n_devices, const int* devices) {
  return NewComms{.out = out,
                  .count = n_devices > 0 ? n_devices : 0,
                  .comm_id = randomCommId(),
                  .n_ranks = n_devices,
                  .devices = devices,
                  .may_be_world = true,
                  .clique = true};
}

NewComms commsOfSplit(CommHandle parent, CommHandle* out, int color) {
  CommEntry* p = CommRegistry::global().find(parent);
  // Every rank of the parent calls ncclCommSplit, in the same order: the k-th split of a
  // parent with one color is one communicator on all of them.
  const uint64_t id = p != nullptr ? commIdOfSplit(p->commId(), bump(p->splits), color) : randomCommId();
  return NewComms{.out = out, .comm_id = id};
}

NewComms commsOfShrink(CommHandle parent, CommHandle* out, int exclude_count) {
  CommEntry* p = CommRegistry::global().find(parent);
  const uint64_t id = p != nullptr ? commIdOfShrink(p->commId(), bump(p->shrinks)) : randomCommId();
  const int parent_ranks = p != nullptr ? p->n_ranks.load(std::memory_order_relaxed) : 0;
  return NewComms{.out = out,
                  .comm_id = id,
                  .n_ranks = parent_ranks > exclude_count && exclude_count >= 0 ? parent_ranks - exclude_count : 0};
}

void beforeCreate(NewComms& comms) {
  if (!comms.may_be_world || comms.n_ranks <= 0) return;
  const int32_t rank = comms.clique ? 0 : comms.rank;  // InitAll: the process starts the world
  if (rank < 0 || rank >= comms.n_ranks) return;
  comms.defined_world = noteNcclWorldRank(rank, comms.n_ranks);
  if (comms.defined_world && comms.unique_id != nullptr) {
    noteJobSecret({static_cast<const uint8_t*>(comms.unique_id), kUniqueIdBytes});
  }
}

void afterCreate(const char* api, const NewComms& comms, const CallOutcome& outcome, Result result) {
  const uint64_t cpu_end_ns = nowNs();  // before asking NCCL about the new communicators
  if (succeeded(result)) noteGpuInUse();  // the CUPTI face may attach
  if (succeeded(result)) noteCommunicatorMade();
  if (succeeded(result) && comms.out != nullptr) {
    for (int i = 0; i < comms.count; ++i) {
      const void* handle = comms.out[i];
      if (handle == nullptr) continue;  // ncclCommSplit with NCCL_SPLIT_NOCOLOR
      CommEntry* comm = CommRegistry::global().add(handle, comms.comm_id);
      if (comm == nullptr) {
        sayRegistryFull();
        continue;
      }
      if (comms.n_ranks > 0) comm->setRanks(comms.n_ranks, comms.clique ? i : comms.rank);
      if (comms.devices != nullptr) comm->cuda_device.store(comms.devices[i], std::memory_order_relaxed);
      // A clique's ranks all live here: each handle is its own global rank only when the
      // clique is the process's world.
      const int32_t global = comms.clique ? (comms.defined_world ? i : -1) : globalRank();
      comm->global_rank.store(global, std::memory_order_relaxed);
      if (result == kSuccess) resolveComm(*comm);
    }
  }
  const uint64_t n_ranks = static_cast<uint64_t>(comms.n_ranks > 0 ? comms.n_ranks : 0);
  recordSpan(StringTable::global().intern(api), comms.comm_id, 0, n_ranks, outcome, result, cpu_end_ns);
}

EndingComm endingComm(CommHandle comm) {
  CommEntry* entry = CommRegistry::global().find(comm);
  if (entry == nullptr) return EndingComm{nullptr, 0, 0};
  return EndingComm{entry, entry->stamp(), entry->recordId()};
}

void afterEnd(const char* api, const EndingComm& ending, bool ends_comm, const CallOutcome& outcome, Result result) {
  // The stamp kills this communicator only: NCCL may have freed it and handed its memory
  // to a communicator another thread created meanwhile.
  if (ends_comm && succeeded(result) && ending.entry != nullptr) ending.entry->markDead(ending.stamp);
  recordSpan(StringTable::global().intern(api), ending.record_id, 0, 0, outcome, result);
}

void afterGroupStart(const CallOutcome& outcome, Result result) {
  if (succeeded(result)) {
    ++tl_group_depth;
  } else {
    const auto depth = static_cast<uint64_t>(tl_group_depth);
    recordSpan(internOnce(g_group_start_id, "ncclGroupStart"), 0, 0, depth, outcome, result);
  }
}

// The outermost ncclGroupEnd is where NCCL launches the group's ops: its span is the
// group's CPU cost. NCCL lowers its depth on every call made inside a group, failed or not.
void afterGroupEnd(const CallOutcome& outcome, Result result) {
  const int depth = tl_group_depth;
  if (depth > 0) tl_group_depth = depth - 1;
  if (depth == 1 || !succeeded(result)) {
    recordSpan(internOnce(g_group_end_id, "ncclGroupEnd"), 0, 0, static_cast<uint64_t>(depth), outcome, result);
  }
}

Result noDefinition(const char* api) {
  static constinit std::atomic<bool> said{false};
  if (!said.exchange(true)) {
    std::fprintf(stderr,
                 "commtrace: %s: no loaded NCCL defines it (nor p%s); the call returns ncclInvalidUsage\n", api, api);
  }
  // ncclInvalidUsage is NCCL's answer to a valid call this library cannot serve here (a
  // feature the running version or setup lacks); no other code says "not available".
  return kInvalidUsage;
}

}  // namespace commtrace::interpose
