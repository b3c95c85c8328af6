#include "tools/report/analyses/run_diff.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "tools/report/load/stats.h"

namespace commtrace::report {
namespace {

using OpKey = std::tuple<std::string, std::string, std::string>;  // (comm, func, bucket)

// A communicator's name as both runs can share it: NCCL's commName, else its size.
std::map<uint64_t, std::string> commKeys(const Report& r) {
  std::map<uint64_t, std::string> keys;
  for (const CommunicatorRow& c : r.communicators) keys[c.id] = !c.name.empty() ? c.name : std::to_string(c.size) + " ranks";
  return keys;
}

std::map<OpKey, OpDiffSide> opSides(const Report& r) {
  const std::map<uint64_t, std::string> keys = commKeys(r);
  struct Sums {
    OpDiffSide side;
    uint64_t timed = 0, top_count = 0;
    double busbw_weighted = 0;
  };
  std::map<OpKey, Sums> sums;
  for (const BandwidthRow& row : r.bandwidth) {
    const auto key = keys.find(row.comm);
    Sums& s = sums[{key != keys.end() ? key->second : row.comm_name, row.func, row.bucket}];
    s.side.count += row.count;
    s.side.time_us_total += row.time_us_total;
    s.timed += row.timed;
    s.busbw_weighted += row.busbw_gbs_p50 * static_cast<double>(row.timed);
    if (row.count > s.top_count) {
      s.top_count = row.count;
      s.side.algo_proto = row.algo.empty() ? row.proto : row.algo + "/" + row.proto;
    }
  }
  std::map<OpKey, OpDiffSide> out;
  for (auto& [key, s] : sums) {
    if (s.timed > 0) {
      s.side.time_us_mean = s.side.time_us_total / static_cast<double>(s.timed);
      s.side.busbw_gbs = s.busbw_weighted / static_cast<double>(s.timed);
    }
    out[key] = s.side;
  }
  return out;
}

// |b - a|, or 0 within noise (under 1 us, or 0.5 % of the larger): rows that did not change
// keep their key order instead of one set by rounding.
double beyondNoise(double a, double b) {
  const double delta = std::abs(b - a);
  return delta < std::max(1.0, 0.005 * std::max(a, b)) ? 0.0 : delta;
}

std::vector<OpDiffRow> opRows(const Report& a, const Report& b) {
  const std::map<OpKey, OpDiffSide> in_a = opSides(a), in_b = opSides(b);
  std::set<OpKey> keys;
  for (const auto& [k, side] : in_a) keys.insert(k);
  for (const auto& [k, side] : in_b) keys.insert(k);
  std::vector<OpDiffRow> rows;
  for (const OpKey& k : keys) {
    OpDiffRow row{std::get<0>(k), std::get<1>(k), std::get<2>(k)};
    if (const auto it = in_a.find(k); it != in_a.end()) row.a = it->second;
    if (const auto it = in_b.find(k); it != in_b.end()) row.b = it->second;
    row.change = row.a.count == 0 ? "new" : row.b.count == 0 ? "gone" : "";
    rows.push_back(std::move(row));
  }
  const auto moved = [](const OpDiffRow& r) { return beyondNoise(r.a.time_us_total, r.b.time_us_total); };
  std::stable_sort(rows.begin(), rows.end(), [&](const OpDiffRow& x, const OpDiffRow& y) { return moved(x) > moved(y); });
  return rows;
}

double exposedPerStep(const OverlapRow& r) { return r.available && r.step_count > 0 ? r.exposed_us / r.step_count : 0; }

std::vector<RankDiffRow> rankRows(const Report& a, const Report& b) {
  std::map<int, RankDiffRow> rows;
  const auto row = [&](int rank) -> RankDiffRow& {
    RankDiffRow& r = rows[rank];
    r.rank = rank;
    return r;
  };
  for (const OverlapRow& o : a.overlap) {
    row(o.rank).step_us_a = o.mean_step_us;
    row(o.rank).exposed_us_a = exposedPerStep(o);
  }
  for (const OverlapRow& o : b.overlap) {
    row(o.rank).step_us_b = o.mean_step_us;
    row(o.rank).exposed_us_b = exposedPerStep(o);
  }
  for (const StragglerRow& s : a.stragglers.ranks) row(s.rank).straggler_a = s.flagged;
  for (const StragglerRow& s : b.stragglers.ranks) row(s.rank).straggler_b = s.flagged;
  std::vector<RankDiffRow> out;
  for (auto& [rank, r] : rows) out.push_back(r);
  const auto moved = [](const RankDiffRow& r) {
    return (r.straggler_a != r.straggler_b ? 1e18 : 0.0) + beyondNoise(r.step_us_a, r.step_us_b) + beyondNoise(r.exposed_us_a, r.exposed_us_b);
  };
  std::stable_sort(out.begin(), out.end(), [&](const RankDiffRow& x, const RankDiffRow& y) { return moved(x) > moved(y); });
  return out;
}

std::vector<PathDiffRow> pathRows(const Report& a, const Report& b) {
  const auto exposedOf = [](const CallPathRow& p) { return p.exposure_known ? p.exposed_us : PathDiffRow::kUnknown; };
  std::map<std::string, PathDiffRow> by_path;  // a report has one row a path
  for (const CallPathRow& p : a.call_paths)
    by_path[p.path] = {.path = p.path, .comm_us_a = p.comm_us, .exposed_us_a = exposedOf(p), .change = "gone"};
  for (const CallPathRow& p : b.call_paths) {
    const auto [it, only_in_b] = by_path.try_emplace(p.path, PathDiffRow{.path = p.path, .change = "new"});
    if (!only_in_b) it->second.change.clear();
    it->second.comm_us_b = p.comm_us;
    it->second.exposed_us_b = exposedOf(p);
  }
  std::vector<PathDiffRow> out;
  for (auto& [path, row] : by_path) out.push_back(std::move(row));
  const auto moved = [](const PathDiffRow& r) {
    const bool exposed = r.exposed_us_a != PathDiffRow::kUnknown && r.exposed_us_b != PathDiffRow::kUnknown;
    return exposed ? beyondNoise(r.exposed_us_a, r.exposed_us_b) : beyondNoise(r.comm_us_a, r.comm_us_b);
  };
  std::stable_sort(out.begin(), out.end(), [&](const PathDiffRow& x, const PathDiffRow& y) { return moved(x) > moved(y); });
  return out;
}

double medianStep(const Report& r) {
  std::vector<double> steps;
  for (const OverlapRow& o : r.overlap)
    if (o.step_count >= 2) steps.push_back(o.mean_step_us);
  return steps.empty() ? 0 : median(steps);
}

double commTime(const Report& r) {
  double total = 0;
  for (const BandwidthRow& row : r.bandwidth) total += row.time_us_total;
  return total;
}

bool culpritOrLoss(const FindingRow& f) { return f.severity == "culprit" || f.severity == "loss"; }

// Culprit findings named by what they are about: the same kind and subject in both runs is
// the same culprit, whatever its figures.
std::set<std::pair<std::string, std::string>> culprits(const Report& r) {
  std::set<std::pair<std::string, std::string>> out;
  for (const FindingRow& f : r.finding_details)
    if (culpritOrLoss(f)) out.insert({f.kind, f.subject});
  return out;
}

// r's culprit findings that are (in_other) or are not in the other run.
std::vector<DiffFinding> findingsOf(const Report& r, const std::set<std::pair<std::string, std::string>>& other, bool in_other) {
  std::vector<DiffFinding> out;
  for (const FindingRow& f : r.finding_details)
    if (culpritOrLoss(f) && other.count({f.kind, f.subject}) == (in_other ? 1u : 0u)) out.push_back({f.kind, f.subject, f.finding});
  return out;
}

std::vector<std::string> unrelatedWarnings(const Report& a, const Report& b, const std::vector<OpDiffRow>& ops) {
  std::vector<std::string> out;
  if (a.run.ranks != b.run.ranks)
    out.push_back("A has " + std::to_string(a.run.ranks) + " ranks and B " + std::to_string(b.run.ranks) +
                  ": they may not be one job before and after a change");
  const bool any_in_both = std::any_of(ops.begin(), ops.end(), [](const OpDiffRow& r) { return r.change.empty(); });
  if (!ops.empty() && !any_in_both)
    out.push_back("no op of A matches one of B (communicator name, func and size): every op is new or gone");
  return out;
}

std::vector<GainCheck> gainChecks(const Report& a, const std::set<std::pair<std::string, std::string>>& in_b, double measured_us) {
  std::vector<GainCheck> out;
  for (const FindingRow& f : a.finding_details)
    if (culpritOrLoss(f) && !std::isnan(f.step_saved_us) && !in_b.count({f.kind, f.subject}))
      out.push_back({f.subject, f.finding, f.step_saved_us, measured_us});
  return out;
}

}  // namespace

RunDiff diffReports(const Report& a, const Report& b) {
  RunDiff d;
  d.step_us_a = medianStep(a);
  d.step_us_b = medianStep(b);
  d.comm_us_a = commTime(a);
  d.comm_us_b = commTime(b);
  d.ops = opRows(a, b);
  d.ranks = rankRows(a, b);
  d.paths = pathRows(a, b);
  const auto in_a = culprits(a), in_b = culprits(b);
  d.findings_new = findingsOf(b, in_a, false);
  d.findings_gone = findingsOf(a, in_b, false);
  d.findings_kept = findingsOf(b, in_a, true);
  d.warnings = unrelatedWarnings(a, b, d.ops);
  if (d.step_us_a > 0 && d.step_us_b > 0) d.gains = gainChecks(a, in_b, d.step_us_a - d.step_us_b);
  return d;
}

}  // namespace commtrace::report
