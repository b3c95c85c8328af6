// What the NCCL wrappers (nccl_wrappers.cc) record around each forwarded call: ops the
// profiler-plugin face will not record, the communicators they belong to, failed calls,
// communicator creation and destruction, and the user's outermost group ends. The
// wrappers only forward and time; every decision is made here.
#pragma once

#include <cstdint>

#include "interpose/comm_registry.h"
#include "interpose/nccl_api.h"

namespace commtrace::interpose {

inline bool succeeded(nccl_api::Result result) {
  return result == nccl_api::kSuccess || result == nccl_api::kInProgress;
}

// One collective or p2p call, as the user made it.
struct OpCall {
  OpFunc func;
  const void* comm;
  uint64_t count;     // the user's count (per rank, per peer for AlltoAll/Gather/Scatter)
  int datatype;
  int root_or_peer;   // root (Broadcast, Reduce, Gather, Scatter), peer (Send, Recv), else 0 as NCCL reports it
  const void* stream;
  const void* caller;  // the wrapper's return address, where a sampled call stack starts
};

// The forwarded call, as the wrapper saw it. Its return time is read only when a record
// needs it, a few ns after the return: an op the plugin covers costs one clock read.
struct CallOutcome {
  uint64_t cpu_start_ns;
  bool plugin_saw;          // the plugin face started an API event during the call
  uint64_t plugin_comm_id;  // its communicator's id, when it did
};

// Hot path, after a successful (or in-progress) op: counts it on its communicator and
// records it unless the plugin will.
void afterOp(const OpCall& call, const CallOutcome& outcome);

// A call NCCL refused: an ApiSpanRecord with its result, no op.
void recordFailedCall(const char* api, const OpCall& call, const CallOutcome& outcome, nccl_api::Result result);

// The communicators a creation call makes, described before the call (split and shrink
// counters advance on every call, so that all ranks of the parent agree).
struct NewComms {
  nccl_api::CommHandle* out = nullptr;  // where NCCL writes the new handle(s)
  int count = 1;                        // handles written: ncclCommInitAll's n_devices, else 1
  uint64_t comm_id = 0;
  int n_ranks = 0;  // from the arguments; 0 where NCCL decides (split, shrink)
  int rank = -1;    // from the arguments; InitAll: the handle's index
  const int* devices = nullptr;  // ncclCommInitAll's device list
  bool may_be_world = false;     // InitRank*/InitAll: the process's first is its world
  bool clique = false;           // InitAll: this process holds every rank
  bool defined_world = false;    // set by beforeCreate: this call is the process's world
  const void* unique_id = nullptr;  // InitRank*: the (first) ncclUniqueId, the job's secret when it makes the world
};
NewComms commsOfInitRank(nccl_api::CommHandle* out, int n_ranks, const nccl_api::UniqueId& id, int rank);
NewComms commsOfInitRankScalable(nccl_api::CommHandle* out, int n_ranks, int rank, int n_ids,
                                 const nccl_api::UniqueId* ids);
NewComms commsOfInitAll(nccl_api::CommHandle* out, int n_devices, const int* devices);
NewComms commsOfSplit(nccl_api::CommHandle parent, nccl_api::CommHandle* out, int color);
NewComms commsOfShrink(nccl_api::CommHandle parent, nccl_api::CommHandle* out, int exclude_count);

// Cold: before a creation call. The world rank is noted from the arguments before NCCL
// runs: the plugin face records during the init and so starts the trace file, whose
// header takes the rank known at that moment.
void beforeCreate(NewComms& comms);
// Cold: after a creation call returned.
void afterCreate(const char* api, const NewComms& comms, const CallOutcome& outcome, nccl_api::Result result);

// Cold: ncclCommDestroy / Abort / Finalize. Taken before the call: what the span names.
struct EndingComm {
  CommEntry* entry;
  uint64_t stamp;
  uint64_t record_id;
};
EndingComm endingComm(nccl_api::CommHandle comm);
void afterEnd(const char* api, const EndingComm& ending, bool ends_comm, const CallOutcome& outcome,
              nccl_api::Result result);

// ncclGroupStart / ncclGroupEnd, on the calling thread (NCCL's group depth is per thread).
void afterGroupStart(const CallOutcome& outcome, nccl_api::Result result);
void afterGroupEnd(const CallOutcome& outcome, nccl_api::Result result);

// Cold: a wrapper whose NCCL function no loaded library defines. Says so once.
nccl_api::Result noDefinition(const char* api);

}  // namespace commtrace::interpose
