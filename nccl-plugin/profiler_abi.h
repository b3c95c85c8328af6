// Our declarations of NCCL's profiler-plugin ABI, versions 4 to 7 (NCCL 2.27 to 2.31),
// written from the facts in docs/nccl-profiler.md and pinned to
// its x86-64 offsets by the static_asserts at the bottom. Both sides use this header: the
// plugin (nccl-plugin/) and the NCCL driver (tools/nccl-driver/) that plays NCCL's side in
// tests and the demo; the asserts keep a shared mistake from passing unnoticed.
//
// Later versions only append union members and trailing fields, so each version's
// structures embed the previous one's: offsets stay identical by construction.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/nccl_vocab.h"

namespace commtrace::nccl {

// ncclResult_t is nccl::Result (core/nccl_vocab.h). Only init may return anything but kSuccess.

// ncclDebugLogger_t: level (NONE 0 .. TRACE 5), subsystem flags, file, line, printf format.
using DebugLogger = void (*)(int level, unsigned long flags, const char* file, int line, const char* fmt, ...);
inline constexpr int kLogWarn = 2;
inline constexpr int kLogInfo = 3;
inline constexpr unsigned long kLogSubsysProfile = 1ul << 14;

// Event types: the descriptor's type and the bits of the activation mask.
enum EventType : uint64_t {
  kGroup = 1u << 0,
  kColl = 1u << 1,
  kP2p = 1u << 2,
  kProxyOp = 1u << 3,
  kProxyStep = 1u << 4,
  kProxyCtrl = 1u << 5,
  kKernelCh = 1u << 6,
  kNetPlugin = 1u << 7,
  kGroupApi = 1u << 8,     // v5
  kCollApi = 1u << 9,      // v5
  kP2pApi = 1u << 10,      // v5
  kKernelLaunch = 1u << 11,  // v5
  kCeColl = 1u << 12,      // v6
  kCeSync = 1u << 13,      // v6
  kCeBatch = 1u << 14,     // v6
  kKernelPhase = 1u << 15,  // v7
};

// ncclProfilerEventState_t: a 4-byte enum whose values every version shares.
enum EventState : int {
  kProxyStepSendGpuWait = 8,
  kProxyStepSendWait = 9,
  kProxyStepRecvWait = 10,
  kProxyStepRecvFlushWait = 11,
  kProxyStepRecvGpuWait = 12,
  kProxyCtrlIdle = 13,
  kProxyCtrlAppendEnd = 18,
  kProxyOpInProgress = 19,
  kProxyStepSendPeerWait = 20,
  kNetPluginUpdate = 21,
  kKernelChStop = 22,        // args->kernel_ch.p_timer: GPU stop time
  kGroupStartApiStop = 23,   // end of ncclGroupStart
  kGroupEndApiStart = 24,    // start of ncclGroupEnd
  kKernelPhaseStop = 31,     // v7, args->kernel_ch.p_timer
};

// ncclProfilerEventStateArgs (v4 and later: 8 bytes).
union StateArgs {
  struct { size_t trans_size; } proxy_step;
  struct { int appended_proxy_ops; } proxy_ctrl;
  struct { void* data; } net_plugin;
  struct { uint64_t p_timer; } kernel_ch;
};

// --- union members, in the order they sit after the 24-byte descriptor header ---

struct CollV4 {
  uint64_t seq_number;  // per communicator and per func
  const char* func;
  const void* send_buff;
  void* recv_buff;
  size_t count;  // AllGather/Broadcast: bytes, with datatype "ncclInt8"
  int root;
  const char* datatype;
  uint8_t n_channels;
  uint8_t n_warps;
  const char* algo;
  const char* proto;
};
struct CollV5 {
  CollV4 v4;
  void* parent_group;  // the legacy Group handle; parent_obj is the CollApi handle
};
struct CollV7 {
  CollV5 v5;
  const char* kernel_variant;
  bool is_sym_coll;
  uint64_t user_tag;
};

struct P2pV4 {
  const char* func;  // "Send" / "Recv"
  void* buff;
  const char* datatype;
  size_t count;
  int peer;
  uint8_t n_channels;  // v4: never filled by NCCL's adapter (garbage)
};
struct P2pV5 {
  P2pV4 v4;
  void* parent_group;
};
struct P2pV7 {
  P2pV5 v5;
  uint64_t user_tag;
};

struct GroupApiV5 {
  bool graph_captured;
  int group_depth;  // 1: NCCL's implicit group; above 1: the user called ncclGroupStart
};
struct CollApiV5 {
  const char* func;
  size_t count;  // the user's element count
  const char* datatype;
  int root;
  void* stream;
  bool graph_captured;
};
struct CollApiV7 {
  CollApiV5 v5;
  uint64_t user_tag;
};
struct P2pApiV5 {
  const char* func;  // "Send", "Recv", or the decomposed "AlltoAll"/"Gather"/"Scatter"
  size_t count;
  const char* datatype;
  void* stream;
  bool graph_captured;
};
struct P2pApiV7 {
  P2pApiV5 v5;
  uint64_t user_tag;
};
struct KernelLaunchV5 {
  void* stream;
};

struct ProxyOpDescr {
  int32_t pid;  // the process that created the op; PXN ops come from other processes
  uint8_t channel_id;
  int peer;
  int n_steps;
  int chunk_size;
  int is_send;
};
struct ProxyStepDescr {
  int step;
};
struct KernelChDescr {
  uint8_t channel_id;
  uint64_t p_timer;  // GPU globaltimer at the channel's start, ns
};
struct NetPluginDescr {
  int64_t id;
  void* data;
};

struct CeCollV6 {
  uint64_t seq_number;
  const char* func;
  const void* send_buff;
  void* recv_buff;
  size_t count;
  int root;
  const char* datatype;
  const char* sync_strategy;
  bool intra_batch_sync;
  uint32_t batch_size;
  uint32_t num_batches;
  uint32_t ce_seq_num;
  void* stream;
};
struct CeCollV7 {
  CeCollV6 v6;
  uint64_t user_tag;
};
struct CeCollSyncV6 {
  bool is_complete;
  int n_ranks;
};
struct CeCollBatchV6 {
  int num_ops;
  size_t total_bytes;
  bool use_intra_sync;
};
struct KernelPhaseV7 {
  uint8_t channel_id;
  uint8_t phase_id;  // 0 initial sync, 1 compute, 2 final sync
  const char* phase_name;
  uint64_t p_timer;
};

// The part of a union member that every version shares: later versions embed the earlier
// one as `v5` / `v4`, so core(d.u.coll) is the CollV4 inside any version's Coll, and
// core(d.u.coll_api) the CollApiV5 inside v5's or v7's. Const follows the argument.
template <class Member>
constexpr auto& core(Member& m) {
  if constexpr (requires { m.v5; }) {
    return core(m.v5);
  } else if constexpr (requires { m.v4; }) {
    return m.v4;
  } else {
    return m;
  }
}

// --- descriptors: a 24-byte header, then the union ---

// TypeField is uint8_t in v4 and uint64_t from v5 on (an ABI break).
template <class TypeField, class Union>
struct EventDescr {
  TypeField type;
  void* parent_obj;
  int rank;  // filled for Coll, P2p, Proxy*, NetPlugin, Ce*; 0 for the API events
  Union u;
};

union UnionV4 {
  CollV4 coll;
  P2pV4 p2p;
  ProxyOpDescr proxy_op;
  ProxyStepDescr proxy_step;
  KernelChDescr kernel_ch;
  NetPluginDescr net_plugin;
};
union UnionV5 {
  GroupApiV5 group_api;
  CollApiV5 coll_api;
  P2pApiV5 p2p_api;
  KernelLaunchV5 kernel_launch;
  CollV5 coll;
  P2pV5 p2p;
  ProxyOpDescr proxy_op;
  ProxyStepDescr proxy_step;
  KernelChDescr kernel_ch;
  NetPluginDescr net_plugin;
};
union UnionV6 {
  GroupApiV5 group_api;
  CollApiV5 coll_api;
  P2pApiV5 p2p_api;
  KernelLaunchV5 kernel_launch;
  CollV5 coll;
  P2pV5 p2p;
  ProxyOpDescr proxy_op;
  ProxyStepDescr proxy_step;
  KernelChDescr kernel_ch;
  NetPluginDescr net_plugin;
  CeCollV6 ce_coll;
  CeCollSyncV6 ce_coll_sync;
  CeCollBatchV6 ce_coll_batch;
};
union UnionV7 {
  GroupApiV5 group_api;
  CollApiV7 coll_api;
  P2pApiV7 p2p_api;
  KernelLaunchV5 kernel_launch;
  CollV7 coll;
  P2pV7 p2p;
  ProxyOpDescr proxy_op;
  ProxyStepDescr proxy_step;
  KernelChDescr kernel_ch;
  NetPluginDescr net_plugin;
  CeCollV7 ce_coll;
  CeCollSyncV6 ce_coll_sync;
  CeCollBatchV6 ce_coll_batch;
  KernelPhaseV7 kernel_phase;
};

using EventDescrV4 = EventDescr<uint8_t, UnionV4>;
using EventDescrV5 = EventDescr<uint64_t, UnionV5>;
using EventDescrV6 = EventDescr<uint64_t, UnionV6>;
using EventDescrV7 = EventDescr<uint64_t, UnionV7>;

// --- the exported function table (48 bytes in every version) ---

using InitV4 = Result (*)(void** context, int* activation_mask, const char* comm_name, uint64_t comm_hash,
                          int n_nodes, int n_ranks, int rank, DebugLogger logger);
using InitV5 = Result (*)(void** context, uint64_t comm_id, int* activation_mask, const char* comm_name,
                          int n_nodes, int n_ranks, int rank, DebugLogger logger);

template <class Init, class Descr>
struct ProfilerTable {
  const char* name;
  Init init;
  Result (*start_event)(void* context, void** handle, Descr* descr);  // always writes *handle
  Result (*stop_event)(void* handle);
  Result (*record_event_state)(void* handle, EventState state, StateArgs* args);  // args may be NULL
  Result (*finalize)(void* context);
};

using ProfilerV4 = ProfilerTable<InitV4, EventDescrV4>;
using ProfilerV5 = ProfilerTable<InitV5, EventDescrV5>;
using ProfilerV6 = ProfilerTable<InitV5, EventDescrV6>;
using ProfilerV7 = ProfilerTable<InitV5, EventDescrV7>;

// The exported symbol names, newest first: the order NCCL searches them.
inline constexpr const char* kProfilerSymbols[] = {"ncclProfiler_v7", "ncclProfiler_v6", "ncclProfiler_v5",
                                                   "ncclProfiler_v4"};

// --- pinned offsets (x86-64 LP64) ---

#define CT_AT(Descr, member, offset) static_assert(offsetof(Descr, member) == (offset), #Descr "." #member)
static_assert(sizeof(StateArgs) == 8);
static_assert(sizeof(ProfilerV4) == 48 && sizeof(ProfilerV5) == 48 && sizeof(ProfilerV7) == 48);
static_assert(sizeof(EventDescrV4) == 104 && sizeof(EventDescrV5) == 112 && sizeof(EventDescrV6) == 112 &&
              sizeof(EventDescrV7) == 136);
CT_AT(EventDescrV4, parent_obj, 8);
CT_AT(EventDescrV4, rank, 16);
CT_AT(EventDescrV4, u, 24);
CT_AT(EventDescrV5, u, 24);
CT_AT(EventDescrV4, u.coll.seq_number, 24);
CT_AT(EventDescrV4, u.coll.func, 32);
CT_AT(EventDescrV4, u.coll.count, 56);
CT_AT(EventDescrV4, u.coll.root, 64);
CT_AT(EventDescrV4, u.coll.datatype, 72);
CT_AT(EventDescrV4, u.coll.n_channels, 80);
CT_AT(EventDescrV4, u.coll.n_warps, 81);
CT_AT(EventDescrV4, u.coll.algo, 88);
CT_AT(EventDescrV4, u.coll.proto, 96);
CT_AT(EventDescrV4, u.p2p.count, 48);
CT_AT(EventDescrV4, u.p2p.peer, 56);
CT_AT(EventDescrV4, u.p2p.n_channels, 60);
CT_AT(EventDescrV5, u.group_api.graph_captured, 24);
CT_AT(EventDescrV5, u.group_api.group_depth, 28);
CT_AT(EventDescrV5, u.coll_api.func, 24);
CT_AT(EventDescrV5, u.coll_api.count, 32);
CT_AT(EventDescrV5, u.coll_api.datatype, 40);
CT_AT(EventDescrV5, u.coll_api.root, 48);
CT_AT(EventDescrV5, u.coll_api.stream, 56);
CT_AT(EventDescrV5, u.coll_api.graph_captured, 64);
CT_AT(EventDescrV5, u.p2p_api.count, 32);
CT_AT(EventDescrV5, u.p2p_api.datatype, 40);
CT_AT(EventDescrV5, u.p2p_api.stream, 48);
CT_AT(EventDescrV5, u.p2p_api.graph_captured, 56);
CT_AT(EventDescrV5, u.kernel_launch.stream, 24);
CT_AT(EventDescrV5, u.coll.v4.seq_number, 24);
CT_AT(EventDescrV5, u.coll.v4.n_warps, 81);
CT_AT(EventDescrV5, u.coll.v4.proto, 96);
CT_AT(EventDescrV5, u.coll.parent_group, 104);
CT_AT(EventDescrV5, u.p2p.v4.peer, 56);
CT_AT(EventDescrV5, u.p2p.v4.n_channels, 60);
CT_AT(EventDescrV5, u.p2p.parent_group, 64);
CT_AT(EventDescrV5, u.proxy_op.pid, 24);
CT_AT(EventDescrV5, u.proxy_op.channel_id, 28);
CT_AT(EventDescrV5, u.proxy_op.peer, 32);
CT_AT(EventDescrV5, u.proxy_op.n_steps, 36);
CT_AT(EventDescrV5, u.proxy_op.chunk_size, 40);
CT_AT(EventDescrV5, u.proxy_op.is_send, 44);
CT_AT(EventDescrV5, u.proxy_step.step, 24);
CT_AT(EventDescrV5, u.kernel_ch.channel_id, 24);
CT_AT(EventDescrV5, u.kernel_ch.p_timer, 32);
CT_AT(EventDescrV5, u.net_plugin.id, 24);
CT_AT(EventDescrV5, u.net_plugin.data, 32);
CT_AT(EventDescrV6, u.ce_coll.datatype, 72);
CT_AT(EventDescrV6, u.ce_coll.sync_strategy, 80);
CT_AT(EventDescrV6, u.ce_coll.intra_batch_sync, 88);
CT_AT(EventDescrV6, u.ce_coll.batch_size, 92);
CT_AT(EventDescrV6, u.ce_coll.num_batches, 96);
CT_AT(EventDescrV6, u.ce_coll.ce_seq_num, 100);
CT_AT(EventDescrV6, u.ce_coll.stream, 104);
CT_AT(EventDescrV6, u.ce_coll_sync.is_complete, 24);
CT_AT(EventDescrV6, u.ce_coll_sync.n_ranks, 28);
CT_AT(EventDescrV6, u.ce_coll_batch.num_ops, 24);
CT_AT(EventDescrV6, u.ce_coll_batch.total_bytes, 32);
CT_AT(EventDescrV6, u.ce_coll_batch.use_intra_sync, 40);
CT_AT(EventDescrV7, u.coll_api.user_tag, 72);
CT_AT(EventDescrV7, u.p2p_api.user_tag, 64);
CT_AT(EventDescrV7, u.coll.v5.parent_group, 104);
CT_AT(EventDescrV7, u.coll.kernel_variant, 112);
CT_AT(EventDescrV7, u.coll.is_sym_coll, 120);
CT_AT(EventDescrV7, u.coll.user_tag, 128);
CT_AT(EventDescrV7, u.p2p.user_tag, 72);
CT_AT(EventDescrV7, u.ce_coll.user_tag, 112);
CT_AT(EventDescrV7, u.kernel_phase.channel_id, 24);
CT_AT(EventDescrV7, u.kernel_phase.phase_id, 25);
CT_AT(EventDescrV7, u.kernel_phase.phase_name, 32);
CT_AT(EventDescrV7, u.kernel_phase.p_timer, 40);
#undef CT_AT

}  // namespace commtrace::nccl
