#include "tools/nccl-driver/ground_truth.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

namespace commtrace::driver {
namespace {

using nlohmann::ordered_json;

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

ordered_json memberJson(const MemberTiming& m) {
  return {{"rank", m.rank},          {"comm_rank", m.comm_rank},       {"op_index", m.op_index},
          {"arrival_ns", m.arrival_ns}, {"gpu_start_ns", m.gpu_start_ns}, {"gpu_stop_ns", m.gpu_stop_ns}};
}

uint64_t algBytes(const CollInstance& c, int n) { return nccl::ncclTestsBytes(funcName(c.func), c.count * c.datatype->size, n); }

double gbps(uint64_t bytes, uint64_t ns) { return ns == 0 ? 0.0 : static_cast<double>(bytes) / static_cast<double>(ns); }

// Sorted, disjoint: the union of [start, end) spans in simulated time.
std::vector<std::pair<uint64_t, uint64_t>> unionOf(std::vector<std::pair<uint64_t, uint64_t>> spans) {
  std::sort(spans.begin(), spans.end());
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (const auto& span : spans) {
    if (!out.empty() && span.first <= out.back().second) out.back().second = std::max(out.back().second, span.second);
    else out.push_back(span);
  }
  return out;
}

uint64_t lengthOf(const std::vector<std::pair<uint64_t, uint64_t>>& spans) {
  uint64_t total = 0;
  for (const auto& [a, b] : spans) total += b - a;
  return total;
}

// Per rank, what the overlap analysis should find, in simulated time (the GPU clock's drift
// stretches it by parts per million): its communication kernels' union and the part of it
// under its compute kernels.
ordered_json overlapJson(const Timeline& t) {
  ordered_json out = ordered_json::array();
  for (size_t r = 0; r < t.ranks.size(); ++r) {
    std::vector<std::pair<uint64_t, uint64_t>> comm, compute, both;
    for (const RankGroup& g : t.ranks[r].groups)
      for (const RankCall& c : g.calls)
        if (c.has_task) comm.emplace_back(c.start_sim_ns, c.stop_sim_ns);
    for (const ComputeSpan& k : t.ranks[r].compute) compute.emplace_back(k.start_sim_ns, k.end_sim_ns);
    comm = unionOf(comm);
    compute = unionOf(compute);
    for (size_t i = 0, j = 0; i < comm.size() && j < compute.size();) {
      const uint64_t lo = std::max(comm[i].first, compute[j].first), hi = std::min(comm[i].second, compute[j].second);
      if (hi > lo) both.emplace_back(lo, hi);
      if (comm[i].second < compute[j].second) ++i;
      else ++j;
    }
    out.push_back({{"rank", r}, {"comm_ns", lengthOf(comm)}, {"overlapped_ns", lengthOf(both)},
                   {"compute_ns", lengthOf(compute)}, {"compute_kernels", t.ranks[r].compute.size()}});
  }
  return out;
}

ordered_json plantedJson(const Scenario& s) {
  ordered_json stragglers = ordered_json::array(), links = ordered_json::array();
  for (const Straggler& st : s.stragglers)
    stragglers.push_back({{"rank", st.rank},
                          {"node", s.nodeOf(st.rank)},
                          {"extra_compute_ns", st.extra_compute_ns},
                          {"extra_host_ns", st.extra_host_ns},
                          {"steps", {st.first_step, st.last_step}}});
  for (const SlowLink& l : s.slow_links) links.push_back({{l.between_nodes ? "nodes" : "ranks", {l.a, l.b}}, {"gbps", l.gbps}});
  return {{"stragglers", stragglers},
          {"slow_links", links},
          {"inter_node_gbps", s.inter_node_gbps},
          {"clock_offsets_ns", s.node_offsets_ns},
          {"clock_drift_ppm", s.node_drift_ppm}};
}

ordered_json headJson(const Scenario& s, const Timeline& t) {
  ordered_json out;
  out["format"] = "commtrace-nccl-driver ground truth 1";
  out["scenario"] = s.name;
  out["description"] = s.description;
  out["ranks"] = s.ranks();
  out["nodes"] = s.nodes;
  out["ranks_per_node"] = s.ranks_per_node;
  out["steps"] = s.steps;
  out["conventions"] = {
      {"arrival_ns", "reference clock: gpu_clock.base_ns + simulated time, no node offset"},
      {"gpu_start_ns/gpu_stop_ns", "the rank's own pTimers (node offset and drift, floored to tick_ns): min KernelCh start, max KernelChStop"},
      {"stop_ns", "reference clock; the same on every member"},
      {"last_arrival_rank", "the member whose arrival everyone waited for (ties: the lowest comm rank)"},
      {"seq", "NCCL seqNumber per (comm, func); graph-captured ops counted as with KernelCh on"},
      {"bw", "GB/s (1e9 B/s) over transfer_ns = stop - last arrival; S and busBw factors as nccl-tests"},
  };
  out["gpu_clock"] = {{"base_ns", s.gpu_clock_base_ns},
                      {"tick_ns", s.timer_tick_ns},
                      {"node_offsets_ns", s.node_offsets_ns},
                      {"node_drift_ppm", s.node_drift_ppm}};
  out["planted"] = plantedJson(s);

  ordered_json comms = ordered_json::array();
  for (const CommInstance& c : t.comms)
    comms.push_back({{"id", c.id},
                     {"id_hex", hex(c.id)},
                     {"name", c.name},
                     {"def", s.comms[c.def].name},
                     {"generation", c.generation},
                     {"members", c.members},
                     {"n_nodes", c.n_nodes}});
  out["comms"] = comms;

  ordered_json ranks = ordered_json::array();
  for (int r = 0; r < s.ranks(); ++r)
    ranks.push_back({{"rank", r}, {"node", s.nodeOf(r)}, {"colls", t.ranks[r].planted_colls}, {"p2ps", t.ranks[r].planted_p2ps}});
  out["planted_ops_per_rank"] = ranks;
  out["overlap"] = overlapJson(t);
  return out;
}

ordered_json collectiveJson(const CollInstance& c, const CommInstance& comm) {
  const int n = static_cast<int>(c.members.size());
  const uint64_t last_arrival = c.stop_ns - c.transfer_ns;
  ordered_json members = ordered_json::array();
  for (const MemberTiming& m : c.members) {
    ordered_json j = memberJson(m);
    j["wait_ns"] = last_arrival - m.arrival_ns;
    members.push_back(j);
  }
  const double alg = gbps(algBytes(c, n), c.transfer_ns);
  return {{"comm_id", comm.id},
          {"comm", comm.name},
          {"func", funcName(c.func)},
          {"seq", c.seq},
          {"op_index", c.op_index},
          {"step", c.step},
          {"count", c.count},
          {"datatype", c.datatype->name},
          {"bytes", c.count * c.datatype->size},
          {"root", c.root},
          {"algo", c.algo},
          {"proto", c.proto},
          {"n_channels", c.n_channels},
          {"graph_captured", c.graph_captured},
          {"user_tag", c.user_tag},
          {"stop_ns", c.stop_ns},
          {"transfer_ns", c.transfer_ns},
          {"last_arrival_rank", c.last_arrival_rank},
          {"alg_bw_gbps", alg},
          {"bus_bw_gbps", alg * nccl::busBwFactor(c.func, n)},
          {"members", members}};
}

ordered_json p2pJson(const P2pInstance& p, const CommInstance& comm) {
  const double alg = gbps(p.bytes, p.transfer_ns);
  return {{"comm_id", comm.id},
          {"comm", comm.name},
          {"api_func", funcName(p.api_func)},
          {"step", p.step},
          {"count", p.count},
          {"datatype", p.datatype->name},
          {"bytes", p.bytes},
          {"n_channels", p.n_channels},
          {"graph_captured", p.graph_captured},
          {"user_tag", p.user_tag},
          {"stop_ns", p.stop_ns},
          {"transfer_ns", p.transfer_ns},
          {"alg_bw_gbps", alg},
          {"bus_bw_gbps", alg},
          {"send", memberJson(p.send)},
          {"recv", memberJson(p.recv)}};
}

// Writes `"key": [` and then each element as made, one per line: a long run's ground truth
// (1.6 GB for 200,000 steps of 16 ranks) is never held whole.
template <class Items, class ToJson>
void writeArray(std::ostream& out, const char* key, const Items& items, ToJson toJson) {
  out << ",\n\"" << key << "\": [";
  const char* separator = "\n";
  for (const auto& item : items) {
    out << separator << toJson(item).dump();
    separator = ",\n";
  }
  out << "\n]";
}

}  // namespace

void writeGroundTruth(const Scenario& s, const Timeline& t, std::ostream& out) {
  const std::string head = headJson(s, t).dump(1);
  out << head.substr(0, head.size() - 2);  // without its closing "\n}"
  // (src, dst, comm, func) -> bytes
  std::map<std::tuple<int, int, uint64_t, std::string>, uint64_t> pairs;
  writeArray(out, "collectives", t.collectives, [&](const CollInstance& c) {
    const CommInstance& comm = t.comms[c.comm];
    for (const Edge& e : c.edges) pairs[{e.src, e.dst, comm.id, std::string(funcName(c.func))}] += e.bytes;
    return collectiveJson(c, comm);
  });
  writeArray(out, "p2p", t.p2ps, [&](const P2pInstance& p) {
    const CommInstance& comm = t.comms[p.comm];
    pairs[{p.send.rank, p.recv.rank, comm.id, std::string(funcName(p.api_func))}] += p.bytes;
    return p2pJson(p, comm);
  });
  writeArray(out, "pair_bytes", pairs, [](const auto& entry) {
    const auto& [key, bytes] = entry;
    const auto& [src, dst, comm_id, func] = key;
    return ordered_json{{"src", src}, {"dst", dst}, {"comm_id", comm_id}, {"func", func}, {"bytes", bytes}};
  });
  out << "\n}\n";
}

ordered_json groundTruthJson(const Scenario& s, const Timeline& t) {
  std::stringstream text;
  writeGroundTruth(s, t, text);
  return ordered_json::parse(text);
}

bool writeGroundTruth(const Scenario& s, const Timeline& t, const std::string& dir, std::string& error) {
  const std::string path = dir + "/" + kGroundTruthFile;
  std::ofstream out(path, std::ios::trunc);
  if (out) writeGroundTruth(s, t, out);
  if (!out) {
    error = "commtrace: " + path + ": cannot write the ground truth: " + std::strerror(errno);
    return false;
  }
  return true;
}

}  // namespace commtrace::driver
