// What the plugin does with each NCCL event, independent of the ABI version: the exported
// ncclProfiler_vN tables (profiler_exports.cc) turn each version's descriptor into one of
// these views and call in here. Everything but initComm/finalizeComm is hot path: no lock,
// no allocation, no syscall, no exception.
#pragma once

#include <cstdint>

#include "nccl-plugin/comm_context.h"
#include "nccl-plugin/profiler_abi.h"

namespace commtrace::plugin {

struct ApiView {  // CollApi / P2pApi (v5+)
  bool is_p2p;
  const char* func;
  uint64_t count;
  const char* datatype;
  int root;
  void* stream;
  bool graph_captured;
  uint64_t user_tag;
};

struct CollView {
  const void* api_parent;  // the CollApi handle (v5+); nullptr for v4, whose parent is the legacy Group
  uint64_t seq_number;
  const char* func;
  uint64_t count;
  const char* datatype;
  int root;
  uint8_t n_channels;
  uint8_t n_warps;
  const char* algo;
  const char* proto;
  uint64_t user_tag;
};

struct P2pView {
  const void* api_parent;
  const char* func;
  uint64_t count;
  const char* datatype;
  int peer;
  uint8_t n_channels;
  bool channels_known;  // false for v4, whose adapter never fills n_channels
  uint64_t user_tag;
};

// Cold path. Returns the context NCCL hands back on every event, nullptr on failure.
CommContext* initComm(uint64_t comm_id, int* activation_mask, const char* comm_name, int n_nodes, int n_ranks,
                      int rank, bool has_api_events);
void finalizeComm(CommContext* comm);

// Each returns the handle for NCCL to keep, nullptr when the event is not tracked.
void* startGroupApi(CommContext& comm, int group_depth);
void* startApi(CommContext& comm, const ApiView& api);
void* startColl(CommContext& comm, const CollView& coll);
void* startP2p(CommContext& comm, const P2pView& p2p);
void* startKernelCh(const void* parent, uint8_t channel, uint64_t p_timer);
void* startProxyOp(CommContext& comm, const void* parent, const nccl::ProxyOpDescr& op);
void* startProxyStep(const void* parent, int step);

void stopEvent(void* handle);
void recordEventState(void* handle, nccl::EventState state, const nccl::StateArgs* args);

}  // namespace commtrace::plugin
