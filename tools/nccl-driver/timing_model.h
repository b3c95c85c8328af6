// The job's global timeline, computed from the scenario alone: deterministic (seeded), so
// every rank process computes the same one and no rank needs to talk to another.
//
// Per rank, a compute cursor and a communication-stream cursor. An op starts on a rank at
// its arrival = max(compute cursor, comm stream free). A collective's GPU stop is the same on
// every member: last arrival + transfer time, where transfer = the busiest ring edge's bytes
// over that edge's bandwidth + per-step latency. Send/Recv pairs stop at max(both arrivals)
// + bytes / link bandwidth + latency. Ops block compute unless the item says "overlap"; each
// step ends with both cursors joined (the optimizer waits for every gradient).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tools/nccl-driver/scenario.h"

namespace commtrace::driver {

// One NCCL communicator: one group of a CommDef in one generation (comms are recreated at
// Scenario::recreate_comms_at_steps, with new ids).
struct CommInstance {
  int def = 0;
  int group = 0;
  int generation = 0;
  uint64_t id = 0;           // commHash (v4) / commId (v5+) handed to init; never 0
  std::string name;          // commName handed to init
  std::vector<int> members;  // global ranks, in comm-rank order
  int n_nodes = 0;
  int commRankOf(int global_rank) const;
};

// One member of one op instance.
struct MemberTiming {
  int rank = 0;               // global
  int comm_rank = 0;
  uint64_t arrival_ns = 0;    // reference clock (gpu_clock_base + simulated time, no node offset)
  uint64_t gpu_start_ns = 0;  // this rank's pTimer at its first channel's start
  uint64_t gpu_stop_ns = 0;   // this rank's pTimer at its last channel's stop
  uint64_t op_index = 0;      // collectives: per comm; p2p: per (comm, peer, func) on this rank
};

struct Edge {
  int src = 0, dst = 0;  // global ranks
  uint64_t bytes = 0;
};

struct CollInstance {
  int comm = 0;  // index into Timeline::comms
  Func func = Func::kAllReduce;
  uint64_t count = 0;
  const Datatype* datatype = nullptr;
  int root = 0;
  uint64_t seq = 0;       // NCCL seqNumber: per comm and func (graph-captured: as if KernelCh is on)
  uint64_t op_index = 0;  // per comm, in Coll-start order
  int step = 0;
  const char* algo = nullptr;
  const char* proto = nullptr;
  int n_channels = 0;
  int n_warps = 0;
  bool graph_captured = false;
  uint64_t user_tag = 0;
  std::vector<MemberTiming> members;  // comm-rank order
  std::vector<Edge> edges;            // the ring decomposition
  uint64_t stop_ns = 0;               // reference clock, the same for every member
  uint64_t transfer_ns = 0;           // stop - last arrival
  int last_arrival_rank = 0;  // ties: the lowest comm rank
};

// One Send matched with its Recv. AlltoAll/Gather/Scatter make one per (sender, receiver).
struct P2pInstance {
  int comm = 0;
  Func api_func = Func::kSend;  // Send, or AlltoAll/Gather/Scatter
  uint64_t count = 0;
  const Datatype* datatype = nullptr;
  int step = 0;
  int n_channels = 0;
  bool graph_captured = false;
  uint64_t user_tag = 0;
  MemberTiming send, recv;
  uint64_t bytes = 0;
  uint64_t stop_ns = 0;  // reference clock
  uint64_t transfer_ns = 0;
};

struct ChannelTimes {
  uint64_t start_ptimer = 0, stop_ptimer = 0;  // this rank's GPU clock
};

// Bytes this rank moves over the network with one peer of a call (the proxy's view), and
// how long they take on that link alone: the rest of the call's transfer time, its sender
// waits for the slowest link of the call (the peer's credit).
struct NetTransfer {
  int peer_comm_rank = 0;
  bool is_send = false;
  uint64_t bytes = 0;
  uint64_t wire_ns = 0;
};

// One API call on one rank and the Coll or P2p task NCCL makes of it.
struct RankCall {
  Func api_func = Func::kAllReduce;   // CollApi/P2pApi func
  Func task_func = Func::kAllReduce;  // Coll/P2p func: Send/Recv for every p2p
  int comm = 0;                       // index into Timeline::comms
  uint64_t count = 0;
  const Datatype* datatype = nullptr;
  int root = 0;
  int peer = -1;  // comm rank, p2p only
  bool has_task = true;  // false when nranks == 1 or count == 0: NCCL makes no Coll/P2p
  bool graph_captured = false;
  const char* algo = nullptr;  // collectives
  const char* proto = nullptr;
  uint8_t n_channels = 0;
  uint8_t n_warps = 0;
  int chunk_size = 0;
  uint64_t user_tag = 0;
  std::vector<ChannelTimes> channels;
  std::vector<NetTransfer> net;
  uint64_t start_sim_ns = 0;  // simulated time of the GPU start (the rank's arrival)
  uint64_t stop_sim_ns = 0;   // simulated time of the GPU stop (pacing, completion order)
  uint64_t transfer_ns = 0;   // the data's time in flight, ending at stop_sim_ns
};

// The calls between one ncclGroupStart/End (explicit or NCCL's implicit one).
struct RankGroup {
  int step = 0;
  int generation = 0;
  int depth = 1;  // GroupApi groupDepth: 1 implicit, 2 inside the user's group
  bool graph_captured = false;
  uint64_t issue_sim_ns = 0;  // simulated time the rank reaches this group (pacing)
  std::vector<RankCall> calls;
  const std::vector<std::string>* nvtx = nullptr;  // the item's NVTX ranges (StepItem::nvtx)
};

// A compute phase of one rank: one kernel on its compute stream.
struct ComputeSpan {
  uint64_t start_sim_ns = 0;
  uint64_t end_sim_ns = 0;
  const std::string* kernel = nullptr;  // the scenario item's kernel name
};

struct RankProgram {
  std::vector<RankGroup> groups;
  std::vector<ComputeSpan> compute;  // in time order
  uint64_t planted_colls = 0;  // Coll events the rank emits with every event type on
  uint64_t planted_p2ps = 0;   // P2p events
};

struct Timeline {
  std::vector<CommInstance> comms;
  std::vector<CollInstance> collectives;
  std::vector<P2pInstance> p2ps;
  std::vector<RankProgram> ranks;
  uint64_t end_sim_ns = 0;

  // Comm instances rank belongs to in generation, in creation order.
  std::vector<int> commsOf(int rank, int generation) const;
};

// only_rank >= 0: what that rank's process plays, and no more: its own program (the other
// ranks' stay empty) and no instances (those are the ground truth's, which the launcher
// writes). Each rank process builds its timeline, and a long run's whole timeline is held
// once, not once per rank (16 ranks of 100,000 steps: 5.5 GB each).
Timeline buildTimeline(const Scenario& s, int only_rank = -1);

// What node's GPU globaltimer reads at simulated time t: base + offset + t * (1 + drift),
// floored to the timer tick.
uint64_t gpuTimer(const Scenario& s, int node, uint64_t sim_ns);
// What node's CUPTI reads at simulated time t: CUPTI's clock is the host's CLOCK_REALTIME,
// which is neither the GPU's clock nor the reference: base + offset, no drift, in ns.
uint64_t cuptiTime(const Scenario& s, int node, uint64_t sim_ns);
// Reference clock reading (no offset, drift or tick) at simulated time t.
inline uint64_t referenceTime(const Scenario& s, uint64_t sim_ns) { return s.gpu_clock_base_ns + sim_ns; }

// Link bandwidth between two ranks in GB/s: intra- or inter-node, lowered by a slow link.
double linkGbps(const Scenario& s, int a, int b);

}  // namespace commtrace::driver
