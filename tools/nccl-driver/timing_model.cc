#include "tools/nccl-driver/timing_model.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "core/fnv1a.h"

namespace commtrace::driver {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A value in [-range, +range] that depends only on the seed and the three coordinates,
// so every process draws the same jitter for the same (rank, step, item).
int64_t jitter(uint64_t seed, uint64_t a, uint64_t b, uint64_t c, uint64_t range) {
  if (range == 0) return 0;
  const uint64_t r = splitmix64(seed ^ splitmix64(a ^ splitmix64(b ^ splitmix64(c))));
  return static_cast<int64_t>(r % (2 * range + 1)) - static_cast<int64_t>(range);
}

uint64_t nsFor(uint64_t bytes, double gbps) { return static_cast<uint64_t>(std::llround(static_cast<double>(bytes) / gbps)); }

// What NCCL's tuner would pick when the scenario does not say: protocol by message size,
// more channels for bigger messages.
using nccl::Proto;
const char* protoText(Proto p) { return nccl::protoName(p).data(); }
const char* defaultProto(uint64_t bytes) {
  return protoText(bytes <= (64u << 10) ? Proto::kLL : bytes <= (1u << 20) ? Proto::kLL128 : Proto::kSimple);
}
int defaultCollChannels(uint64_t bytes) { return bytes <= (64u << 10) ? 2 : bytes <= (1u << 20) ? 4 : 8; }
int defaultP2pChannels(uint64_t bytes) { return bytes >= (1u << 20) ? 2 : 1; }
uint8_t warpsFor(const char* proto) { return proto == nccl::protoName(Proto::kLL128) ? 20 : 16; }
// ProxyOp chunkSize (chunkSize x sliceSteps) by protocol; p2p uses SIMPLE.
int chunkFor(const char* proto) {
  const std::string_view p(proto);
  return p == nccl::protoName(Proto::kLL) ? 32 << 10 : p == nccl::protoName(Proto::kLL128) ? 128 << 10 : 512 << 10;
}

class Builder {
 public:
  Builder(const Scenario& s, int only_rank)
      : s_(s), only_rank_(only_rank), compute_(s.ranks(), 0), comm_(s.ranks(), 0), arrival_(s.ranks(), 0), groups_(s.ranks()) {
    t_.ranks.resize(s.ranks());
  }

  Timeline build() {
    const int generations = static_cast<int>(s_.recreate_comms_at_steps.size()) + 1;
    for (int g = 0; g < generations; ++g) createComms(g);
    coll_index_.assign(t_.comms.size(), 0);
    int generation = 0;
    for (int step = 0; step < s_.steps; ++step) {
      if (generation + 1 < generations && s_.recreate_comms_at_steps[generation] == step) ++generation;
      for (size_t i = 0; i < s_.step.size(); ++i) {
        const StepItem& item = s_.step[i];
        if (item.kind == StepItem::Kind::kCompute) {
          for (int r = 0; r < s_.ranks(); ++r) {
            if (!item.ranks.empty() && std::find(item.ranks.begin(), item.ranks.end(), r) == item.ranks.end()) continue;
            // A late host leaves the GPU idle before the kernel.
            const uint64_t start = compute_[r] + hostDelayNs(r, step);
            compute_[r] = start + computeNs(r, step, i, item.compute_ns);
            if (compute_[r] > start && kept(r)) t_.ranks[r].compute.push_back({start, compute_[r], &item.kernel});
          }
        } else {
          opsItem(step, generation, item);
        }
      }
      for (int r = 0; r < s_.ranks(); ++r) compute_[r] = comm_[r] = std::max(compute_[r], comm_[r]);
    }
    t_.end_sim_ns = *std::max_element(compute_.begin(), compute_.end());
    for (RankProgram& p : t_.ranks)
      for (const RankGroup& g : p.groups)
        for (const RankCall& c : g.calls)
          if (c.has_task) ++(isCollective(c.task_func) ? p.planted_colls : p.planted_p2ps);
    return std::move(t_);
  }

 private:
  void createComms(int generation) {
    for (size_t d = 0; d < s_.comms.size(); ++d) {
      const CommDef& def = s_.comms[d];
      for (size_t g = 0; g < def.groups.size(); ++g) {
        CommInstance c;
        c.def = static_cast<int>(d);
        c.group = static_cast<int>(g);
        c.generation = generation;
        c.name = def.name + "." + std::to_string(g) + (generation > 0 ? "@" + std::to_string(generation) : "");
        c.id = fnv1a("commtrace-nccl-driver/" + s_.name + "/" + c.name);
        if (c.id == 0) c.id = 1;
        c.members = def.groups[g];
        std::vector<int> nodes;
        for (int r : c.members) nodes.push_back(s_.nodeOf(r));
        std::sort(nodes.begin(), nodes.end());
        c.n_nodes = static_cast<int>(std::unique(nodes.begin(), nodes.end()) - nodes.begin());
        instance_[{generation, c.def, c.group}] = static_cast<int>(t_.comms.size());
        t_.comms.push_back(std::move(c));
      }
    }
  }

  uint64_t hostDelayNs(int rank, int step) const {
    uint64_t ns = 0;
    for (const Straggler& st : s_.stragglers)
      if (st.rank == rank && step >= st.first_step && step <= st.last_step) ns += st.extra_host_ns;
    return ns;
  }

  uint64_t computeNs(int rank, int step, size_t item, uint64_t base) const {
    int64_t ns = static_cast<int64_t>(base) + jitter(s_.seed, rank, step, item, s_.compute_jitter_ns);
    for (const Straggler& st : s_.stragglers)
      if (st.rank == rank && step >= st.first_step && step <= st.last_step) ns += static_cast<int64_t>(st.extra_compute_ns);
    return static_cast<uint64_t>(std::max<int64_t>(ns, 0));
  }

  // Channel c starts c * spread after the rank's arrival and stops a little before the op's
  // stop (channel 0 last), so the op's span is [arrival, stop] exactly.
  std::vector<ChannelTimes> channelTimes(int rank, uint64_t arrival, uint64_t stop, int n) const {
    std::vector<ChannelTimes> out;
    for (int c = 0; c < n; ++c) {
      const uint64_t start = arrival + c * s_.channel_spread_ns;
      const uint64_t end = std::max(start, stop - std::min(stop, c * (s_.channel_spread_ns / 4)));
      out.push_back({gpuTimer(s_, s_.nodeOf(rank), start), gpuTimer(s_, s_.nodeOf(rank), end)});
    }
    return out;
  }

  MemberTiming member(const CommInstance& comm, int rank, const RankCall& call) const {
    MemberTiming m;
    m.rank = rank;
    m.comm_rank = comm.commRankOf(rank);
    m.arrival_ns = referenceTime(s_, arrival_[rank]);
    m.gpu_start_ns = UINT64_MAX;
    for (const ChannelTimes& ch : call.channels) {
      m.gpu_start_ns = std::min(m.gpu_start_ns, ch.start_ptimer);
      m.gpu_stop_ns = std::max(m.gpu_stop_ns, ch.stop_ptimer);
    }
    return m;
  }

  uint64_t latencyNs(int a, int b) const {
    return s_.nodeOf(a) == s_.nodeOf(b) ? s_.intra_node_latency_ns : s_.inter_node_latency_ns;
  }

  void opsItem(int step, int generation, const StepItem& item) {
    bool captured = false;
    for (const OpDef& op : item.ops) captured |= op.graph_captured;
    for (int r = 0; r < s_.ranks(); ++r) {
      arrival_[r] = std::max(compute_[r], comm_[r]);
      groups_[r] = RankGroup{step, generation, item.user_group ? 2 : 1, captured, arrival_[r], {}, &item.nvtx};
    }
    for (const OpDef& op : item.ops) {
      const CommDef& def = s_.comms[op.comm];
      if (op.func == Func::kSend) {
        for (const auto& [src, dst] : op.pairs) sendPair(op, commFor(generation, op.comm, src), step, src, dst);
        continue;
      }
      for (size_t g = 0; g < def.groups.size(); ++g) {
        const int c = instance_.at({generation, op.comm, static_cast<int>(g)});
        if (isCollective(op.func)) collective(op, c, step);
        else decomposed(op, c, step);
      }
    }
    for (int r = 0; r < s_.ranks(); ++r) {
      RankGroup& group = groups_[r];
      if (group.calls.empty()) continue;
      // Several calls outside a user group would be several implicit groups that deadlock
      // (a rank sending and receiving); programs group them, as batch_isend_irecv does.
      if (group.calls.size() > 1) group.depth = 2;
      for (const RankCall& call : group.calls) comm_[r] = std::max(comm_[r], call.stop_sim_ns);
      if (!item.overlap) compute_[r] = std::max(compute_[r], comm_[r]);
      if (kept(r)) t_.ranks[r].groups.push_back(std::move(group));
      else group.calls.clear();
    }
  }

  int commFor(int generation, int def, int rank) const {
    const auto& groups = s_.comms[def].groups;
    for (size_t g = 0; g < groups.size(); ++g)
      if (std::find(groups[g].begin(), groups[g].end(), rank) != groups[g].end()) return instance_.at({generation, def, static_cast<int>(g)});
    return -1;
  }

  RankCall callFor(const OpDef& op, int comm) const {
    RankCall call;
    call.api_func = call.task_func = op.func;
    call.comm = comm;
    call.count = op.count;
    call.datatype = op.datatype;
    call.root = nccl::funcInfo(op.func).rooted ? op.root : 0;
    call.graph_captured = op.graph_captured;
    call.user_tag = op.user_tag;
    const uint64_t bytes = op.count * op.datatype->size;
    if (isCollective(op.func)) {
      call.algo = op.algo ? op.algo : nccl::algoName(nccl::Algo::kRing).data();
      call.proto = op.proto ? op.proto : defaultProto(bytes);
      call.n_channels = static_cast<uint8_t>(op.channels ? op.channels : defaultCollChannels(bytes));
      call.n_warps = warpsFor(call.proto);
      call.chunk_size = chunkFor(call.proto);
    } else {
      call.n_channels = static_cast<uint8_t>(op.channels ? op.channels : defaultP2pChannels(bytes));
      call.chunk_size = chunkFor(protoText(Proto::kSimple));
    }
    return call;
  }

  // The ring decomposition: who sends how many bytes to whom (nccl-tests' wire model).
  std::vector<Edge> ringEdges(const OpDef& op, const std::vector<int>& m) const {
    const uint64_t n = m.size(), bytes = op.count * op.datatype->size;
    std::vector<Edge> edges;
    switch (op.func) {
      case Func::kAllReduce:
        for (uint64_t i = 0; i < n; ++i) edges.push_back({m[i], m[(i + 1) % n], 2 * (n - 1) * bytes / n});
        break;
      case Func::kAllGather:
      case Func::kReduceScatter:
        for (uint64_t i = 0; i < n; ++i) edges.push_back({m[i], m[(i + 1) % n], (n - 1) * bytes});
        break;
      case Func::kBroadcast:  // a chain from the root
        for (uint64_t k = 0; k + 1 < n; ++k) edges.push_back({m[(op.root + k) % n], m[(op.root + k + 1) % n], bytes});
        break;
      case Func::kReduce:  // a chain ending at the root
        for (uint64_t k = 1; k < n; ++k) edges.push_back({m[(op.root + k) % n], m[(op.root + k + 1) % n], bytes});
        break;
      default:
        break;
    }
    return edges;
  }

  void collective(const OpDef& op, int c, int step) {
    const CommInstance& comm = t_.comms[c];
    const std::vector<int>& m = comm.members;
    RankCall call = callFor(op, c);
    call.has_task = m.size() > 1 && op.count > 0;
    if (!call.has_task) {
      for (int r : m) groups_[r].calls.push_back(call);
      return;
    }
    CollInstance inst;
    inst.comm = c;
    inst.func = op.func;
    inst.count = op.count;
    inst.datatype = op.datatype;
    inst.root = call.root;
    inst.seq = seq_[{c, op.func}]++;
    inst.op_index = coll_index_[c]++;
    inst.step = step;
    inst.algo = call.algo;
    inst.proto = call.proto;
    inst.n_channels = call.n_channels;
    inst.n_warps = call.n_warps;
    inst.graph_captured = op.graph_captured;
    inst.user_tag = op.user_tag;
    inst.edges = ringEdges(op, m);

    uint64_t slowest = 0, latency = 0;
    for (const Edge& e : inst.edges) {
      slowest = std::max(slowest, nsFor(e.bytes, linkGbps(s_, e.src, e.dst)));
      latency = std::max(latency, latencyNs(e.src, e.dst));
    }
    const uint64_t ring_steps = op.func == Func::kAllReduce ? 2 * (m.size() - 1) : m.size() - 1;
    uint64_t last = 0;
    inst.last_arrival_rank = m.front();
    for (int r : m) {
      if (arrival_[r] > last) inst.last_arrival_rank = r;  // ties: the lowest comm rank
      last = std::max(last, arrival_[r]);
    }
    inst.transfer_ns = slowest + ring_steps * latency;
    const uint64_t stop = last + inst.transfer_ns;
    inst.stop_ns = referenceTime(s_, stop);

    for (int r : m) {
      RankCall mine = call;
      mine.channels = channelTimes(r, arrival_[r], stop, mine.n_channels);
      mine.start_sim_ns = arrival_[r];
      mine.stop_sim_ns = stop;
      mine.transfer_ns = inst.transfer_ns;
      for (const Edge& e : inst.edges) {
        if (s_.nodeOf(e.src) == s_.nodeOf(e.dst)) continue;
        const uint64_t wire = nsFor(e.bytes, linkGbps(s_, e.src, e.dst));
        if (e.src == r) mine.net.push_back({comm.commRankOf(e.dst), true, e.bytes, wire});
        if (e.dst == r) mine.net.push_back({comm.commRankOf(e.src), false, e.bytes, wire});
      }
      inst.members.push_back(member(comm, r, mine));
      inst.members.back().op_index = inst.op_index;
      groups_[r].calls.push_back(std::move(mine));
    }
    if (only_rank_ < 0) t_.collectives.push_back(std::move(inst));
  }

  // The two calls of one transfer, with its stop and the shared instance bookkeeping.
  void p2pTransfer(const OpDef& op, int c, int step, int src, int dst, uint64_t stop, uint64_t transfer_ns) {
    const CommInstance& comm = t_.comms[c];
    RankCall send = callFor(op, c), recv = send;
    send.task_func = Func::kSend;
    recv.task_func = Func::kRecv;
    // A plain pair is an ncclSend on one side and an ncclRecv on the other; only the pieces
    // of AlltoAll/Gather/Scatter keep the collective's name in their P2pApi events.
    if (op.func == Func::kSend) recv.api_func = Func::kRecv;
    send.peer = comm.commRankOf(dst);
    recv.peer = comm.commRankOf(src);
    send.has_task = recv.has_task = op.count > 0;
    if (!send.has_task) {
      groups_[src].calls.push_back(send);
      groups_[dst].calls.push_back(recv);
      return;
    }
    const uint64_t bytes = op.count * op.datatype->size;
    send.channels = channelTimes(src, arrival_[src], stop, send.n_channels);
    recv.channels = channelTimes(dst, arrival_[dst], stop, recv.n_channels);
    send.start_sim_ns = arrival_[src];
    recv.start_sim_ns = arrival_[dst];
    send.stop_sim_ns = recv.stop_sim_ns = stop;
    send.transfer_ns = recv.transfer_ns = transfer_ns;
    if (s_.nodeOf(src) != s_.nodeOf(dst)) {
      const uint64_t wire = nsFor(bytes, linkGbps(s_, src, dst));
      send.net.push_back({send.peer, true, bytes, wire});
      recv.net.push_back({recv.peer, false, bytes, wire});
    }
    P2pInstance inst;
    inst.comm = c;
    inst.api_func = op.func;
    inst.count = op.count;
    inst.datatype = op.datatype;
    inst.step = step;
    inst.n_channels = send.n_channels;
    inst.graph_captured = op.graph_captured;
    inst.user_tag = op.user_tag;
    inst.bytes = bytes;
    inst.stop_ns = referenceTime(s_, stop);
    inst.transfer_ns = transfer_ns;
    inst.send = member(comm, src, send);
    inst.recv = member(comm, dst, recv);
    inst.send.op_index = p2p_index_[{src, c, send.peer, Func::kSend}]++;
    inst.recv.op_index = p2p_index_[{dst, c, recv.peer, Func::kRecv}]++;
    groups_[src].calls.push_back(std::move(send));
    groups_[dst].calls.push_back(std::move(recv));
    if (only_rank_ < 0) t_.p2ps.push_back(std::move(inst));
  }

  void sendPair(const OpDef& op, int c, int step, int src, int dst) {
    const uint64_t transfer = nsFor(op.count * op.datatype->size, linkGbps(s_, src, dst)) + latencyNs(src, dst);
    p2pTransfer(op, c, step, src, dst, std::max(arrival_[src], arrival_[dst]) + transfer, transfer);
  }

  // AlltoAll, Gather and Scatter: NCCL turns them into per-peer Send/Recv tasks under
  // P2pApi events that keep the API's func. One kernel: every transfer stops together, after
  // the busiest rank has pushed its bytes one peer after the other.
  void decomposed(const OpDef& op, int c, int step) {
    const std::vector<int>& m = t_.comms[c].members;
    if (m.size() < 2) return;
    const int root = m[op.root];
    std::vector<std::pair<int, int>> transfers;  // (sender, receiver), in each rank's call order
    for (int a : m)
      for (int b : m) {
        if (a == b) continue;
        if (op.func == Func::kAlltoAll || (op.func == Func::kGather && b == root) || (op.func == Func::kScatter && a == root))
          transfers.emplace_back(a, b);
      }
    const uint64_t bytes = op.count * op.datatype->size;
    std::map<int, uint64_t> busy;  // per rank: time to push or pull its transfers one by one
    uint64_t latency = 0, last = 0;
    for (const auto& [a, b] : transfers) {
      const uint64_t ns = nsFor(bytes, linkGbps(s_, a, b));
      busy[op.func == Func::kGather ? b : a] += ns;
      latency = std::max(latency, latencyNs(a, b));
    }
    for (int r : m) last = std::max(last, arrival_[r]);
    uint64_t slowest = 0;
    for (const auto& [rank, ns] : busy) slowest = std::max(slowest, ns);
    const uint64_t transfer = slowest + latency;
    for (const auto& [a, b] : transfers) p2pTransfer(op, c, step, a, b, last + transfer, transfer);
  }

  bool kept(int rank) const { return only_rank_ < 0 || rank == only_rank_; }

  const Scenario& s_;
  const int only_rank_;
  Timeline t_;
  std::vector<uint64_t> compute_, comm_, arrival_;  // per rank, simulated ns
  std::vector<RankGroup> groups_;                   // per rank, the group being built
  std::map<std::tuple<int, int, int>, int> instance_;  // (generation, def, group) -> comm
  std::map<std::pair<int, Func>, uint64_t> seq_;
  std::vector<uint64_t> coll_index_;
  std::map<std::tuple<int, int, int, Func>, uint64_t> p2p_index_;  // (rank, comm, peer, func)
};

}  // namespace

Timeline buildTimeline(const Scenario& s, int only_rank) { return Builder(s, only_rank).build(); }

int CommInstance::commRankOf(int global_rank) const {
  const auto it = std::find(members.begin(), members.end(), global_rank);
  return it == members.end() ? -1 : static_cast<int>(it - members.begin());
}

std::vector<int> Timeline::commsOf(int rank, int generation) const {
  std::vector<int> out;
  for (size_t c = 0; c < comms.size(); ++c)
    if (comms[c].generation == generation && comms[c].commRankOf(rank) >= 0) out.push_back(static_cast<int>(c));
  return out;
}

uint64_t gpuTimer(const Scenario& s, int node, uint64_t sim_ns) {
  const int64_t drift = std::llround(static_cast<double>(sim_ns) * s.node_drift_ppm[node] * 1e-6);
  const uint64_t t = s.gpu_clock_base_ns + static_cast<uint64_t>(s.node_offsets_ns[node] + drift) + sim_ns;
  return t / s.timer_tick_ns * s.timer_tick_ns;
}

uint64_t cuptiTime(const Scenario& s, int node, uint64_t sim_ns) {
  // Hosts' wall clocks sit near the GPUs' but not on them: 41.7 us apart per node.
  return s.gpu_clock_base_ns + sim_ns + 41'700 * static_cast<uint64_t>(node + 1);
}

double linkGbps(const Scenario& s, int a, int b) {
  const int na = s.nodeOf(a), nb = s.nodeOf(b);
  double gbps = na == nb ? s.intra_node_gbps : s.inter_node_gbps;
  for (const SlowLink& link : s.slow_links) {
    const int x = link.between_nodes ? na : a, y = link.between_nodes ? nb : b;
    if ((x == link.a && y == link.b) || (x == link.b && y == link.a)) gbps = std::min(gbps, link.gbps);
  }
  return gbps;
}

}  // namespace commtrace::driver
