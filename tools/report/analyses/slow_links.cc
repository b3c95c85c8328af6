#include "tools/report/analyses/slow_links.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

#include "tools/report/analyses/coll_shapes.h"
#include "tools/report/analyses/edge_model.h"
#include "tools/report/analyses/op_metrics.h"
#include "tools/report/analyses/rank_index.h"
#include "tools/report/load/stats.h"

namespace commtrace::report {
namespace {

struct LinkSamples {
  double best_gbs = 0;
  uint64_t ops = 0;
  uint64_t direct_ops = 0;  // ops that crossed this pair only (p2p, collectives of two members)
  WireSums wire[2];         // sends from the lower rank to the higher, and back

  // The slower direction timed on the wire; nullptr when neither was. A direction whose steps
  // were mostly reported at once (kMinWireNs) was not timed.
  const WireSums* slowerWire() const {
    const auto timed = [](const WireSums& w) { return w.steps > 0 && w.steps >= w.instant_steps; };
    if (!timed(wire[0]) || !timed(wire[1])) return timed(wire[0]) ? &wire[0] : timed(wire[1]) ? &wire[1] : nullptr;
    return wire[0].gbs() <= wire[1].gbs() ? &wire[0] : &wire[1];
  }
};

class LinkCollector {
 public:
  explicit LinkCollector(const RunModel& run) : run_(run), slots_(rankSlots(run)) {}

  // Each shape's timed ops at once: the best of them is the fastest one's busBw.
  void addCollectives(const CollShapeTally& shapes) {
    std::vector<ModelEdge> edges;
    std::vector<std::pair<int, int>> pairs;
    for (const auto& [shape, sums] : shapes.shapes()) {
      if (sums.timed == 0 || shape.bytes == 0) continue;
      const nccl::FuncInfo* func = NamePool::ncclFunc(shape.func);
      const int n = static_cast<int>(shape.n);
      const double bus =
          gbPerS(static_cast<double>(ncclTestsBytes(func, shape.bytes, n)), sums.shortest_ns) * busBwFactor(func, n);
      edges.clear();
      modelEdges(run_.name(shape.func), run_.name(shape.algo), n, shape.root, shape.bytes, edges);
      pairs.clear();
      for (const ModelEdge& e : edges)  // an op counts once per pair, whichever way its edges go
        if (e.bytes >= kMinLinkBytes) pairs.push_back(std::minmax(e.src, e.dst));
      std::sort(pairs.begin(), pairs.end());
      pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
      for (const auto& [a, b] : pairs) add(shape.comm, a, b, bus, sums.timed, pairs.size() == 1);
    }
  }

  // Each pair's timed transfers of at least kMinLinkBytes: the best of them is the fastest's.
  void addTransfers(const TransferCellTally& transfers) {
    for (const auto& [cell, sums] : transfers.cells())
      if (sums.link_ops != 0) add(cell.comm, cell.src, cell.dst, sums.best_gbs, sums.link_ops, true);
  }

  // Each process's sends as NCCL's proxy timed them, per peer: a link's own time on the wire.
  void addProxyWire() {
    std::map<std::pair<uint64_t, uint32_t>, uint32_t> comm_of;  // (comm id, restart) -> comm
    for (uint32_t c = 0; c < run_.comms.size(); ++c) comm_of.try_emplace({run_.comms[c].id, run_.comms[c].restart_count}, c);
    for (size_t p = 0; p < run_.timelines.size() && p < run_.processes.size(); ++p) {
      for (const auto& [key, sums] : run_.timelines[p].proxy_wire.sends()) {
        const auto comm = comm_of.find({key.first, run_.processes[p].restart_count});
        if (comm == comm_of.end()) continue;
        const int src = run_.processes[p].rank, dst = globalRankOf(run_.comms[comm->second], key.second);
        if (src < 0 || dst < 0 || src == dst || src >= slots_ || dst >= slots_) continue;
        links_[static_cast<uint64_t>(std::min(src, dst)) * slots_ + std::max(src, dst)].wire[src < dst ? 0 : 1].merge(sums);
      }
    }
  }

  // (a, b) with a < b -> samples
  const std::unordered_map<uint64_t, LinkSamples>& links() const { return links_; }
  int slots() const { return slots_; }

 private:
  void add(uint32_t comm, int src_comm_rank, int dst_comm_rank, double gbs, uint64_t ops, bool direct) {
    const Communicator& c = run_.comms[comm];
    int a = globalRankOf(c, src_comm_rank), b = globalRankOf(c, dst_comm_rank);
    if (a < 0 || b < 0 || a == b || a >= slots_ || b >= slots_) return;
    if (a > b) std::swap(a, b);
    LinkSamples& s = links_[static_cast<uint64_t>(a) * slots_ + b];
    s.best_gbs = std::max(s.best_gbs, gbs);
    s.ops += ops;
    if (direct) s.direct_ops += ops;
  }

  const RunModel& run_;
  int slots_;
  std::unordered_map<uint64_t, LinkSamples> links_;
};

// A link NCCL's proxy timed is judged by its time on the wire, against the links of its kind
// timed so: direct evidence of the link itself, whatever else its ops crossed.
bool judgeByWire(SlowLinkRow& row) {
  if (!judgedByWire(row)) return false;
  const double ratio = row.wire_gbs / row.wire_median_gbs;
  row.flagged = ratio < kSlowLinkRatio;
  const double depth = std::clamp(1.0 - ratio / kSlowLinkRatio, 0.0, 1.0);
  row.confidence = row.flagged ? depth * std::min(1.0, static_cast<double>(row.wire_steps) / kMinWireSteps) : 0.0;
  return true;
}

void judge(SlowLinkRow& row, const LinkSamples& s, double median, size_t peers) {
  row.direct_ops = s.direct_ops;
  row.kind_links = peers;
  if (judgeByWire(row) || peers < static_cast<size_t>(kMinLinksOfAKind) || median <= 0) return;
  const double ratio = row.achieved_gbs / median;
  row.flagged = ratio < kSlowLinkRatio;
  // 0 at the threshold, 1 as the bandwidth falls to nothing; fewer than 3 ops, or only
  // collectives that also crossed other pairs, make it weaker evidence.
  const double depth = std::clamp(1.0 - ratio / kSlowLinkRatio, 0.0, 1.0);
  const double repeat = std::min(1.0, static_cast<double>(s.ops) / 3.0);
  row.confidence = row.flagged ? depth * repeat * (s.direct_ops > 0 ? 1.0 : 0.75) : 0.0;
}

}  // namespace

bool judgedByWire(const SlowLinkRow& row) {
  return row.wire_gbs > 0 && row.wire_median_gbs > 0 && row.wire_links >= static_cast<uint64_t>(kMinLinksOfAKind);
}

std::vector<SlowLinkRow> slowLinks(const RunModel& run) { return slowLinks(run, collShapes(run), transferCells(run)); }

std::vector<SlowLinkRow> slowLinks(const RunModel& run, const CollShapeTally& shapes, const TransferCellTally& transfers) {
  LinkCollector collector(run);
  collector.addCollectives(shapes);
  collector.addTransfers(transfers);
  collector.addProxyWire();
  const std::vector<std::string> hosts = hostsByRank(run);
  std::vector<SlowLinkRow> rows;
  std::vector<const LinkSamples*> samples;
  std::vector<double> intra, inter, intra_wire, inter_wire;
  for (const auto& [key, s] : collector.links()) {
    SlowLinkRow row;
    row.a = static_cast<int>(key / collector.slots());
    row.b = static_cast<int>(key % collector.slots());
    const std::string &ha = hosts[row.a], &hb = hosts[row.b];
    if (ha.empty() || hb.empty()) continue;  // its kind is unknown: nothing to compare with
    row.hosts = ha + " <-> " + hb;
    row.inter_host = ha != hb;
    row.achieved_gbs = s.best_gbs;
    row.ops = s.ops;
    if (s.ops > 0) (row.inter_host ? inter : intra).push_back(s.best_gbs);
    if (const WireSums* w = s.slowerWire(); w != nullptr) {
      row.wire_gbs = w->gbs();
      row.wire_steps = w->steps;
      row.wire_peer_wait_share = static_cast<double>(w->peer_wait_ns) / static_cast<double>(w->peer_wait_ns + w->wire_ns);
      (row.inter_host ? inter_wire : intra_wire).push_back(row.wire_gbs);
    }
    rows.push_back(std::move(row));
    samples.push_back(&s);
  }
  const double intra_median = median(intra), inter_median = median(inter);
  for (size_t i = 0; i < rows.size(); ++i) {
    SlowLinkRow& row = rows[i];
    row.peer_median_gbs = row.inter_host ? inter_median : intra_median;
    if (row.wire_gbs > 0) {
      row.wire_median_gbs = median(row.inter_host ? inter_wire : intra_wire);
      row.wire_links = (row.inter_host ? inter_wire : intra_wire).size();
    }
    judge(row, *samples[i], row.peer_median_gbs, row.inter_host ? inter.size() : intra.size());
  }
  auto ratio = [](const SlowLinkRow& r) {
    if (r.wire_gbs > 0 && r.wire_median_gbs > 0) return r.wire_gbs / r.wire_median_gbs;
    return r.peer_median_gbs > 0 ? r.achieved_gbs / r.peer_median_gbs : 1.0;
  };
  std::sort(rows.begin(), rows.end(), [&](const SlowLinkRow& x, const SlowLinkRow& y) {
    if (x.flagged != y.flagged) return x.flagged;
    if (ratio(x) != ratio(y)) return ratio(x) < ratio(y);
    return std::tie(x.a, x.b) < std::tie(y.a, y.b);
  });
  const auto flagged = static_cast<size_t>(std::count_if(rows.begin(), rows.end(), [](const SlowLinkRow& r) { return r.flagged; }));
  rows.resize(std::min(rows.size(), std::max(flagged, kMaxLinkRows)));
  return rows;
}

}  // namespace commtrace::report
