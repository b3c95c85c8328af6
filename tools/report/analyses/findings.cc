#include "tools/report/analyses/findings.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "tools/report/analyses/slow_links.h"
#include "tools/report/analyses/stragglers.h"
#include "tools/report/format.h"
#include "tools/report/load/stats.h"

namespace commtrace::report {
namespace {

constexpr const char* kTierNames[] = {"window", "loss", "culprit", "cost", "note"};

class Findings {
 public:
  // A new finding, to fill its facts and figures in.
  Finding& add(FindingTier tier, std::string kind, std::string level, FindingFacts facts = facts::EmptyWindow{}) {
    Finding& f = items_.emplace_back();
    f.tier = tier;
    f.row.kind = std::move(kind);
    f.row.severity = tierName(tier);
    f.row.level = std::move(level);
    f.facts = std::move(facts);
    return f;
  }
  std::vector<Finding> inOrder() && {
    std::stable_sort(items_.begin(), items_.end(), [](const Finding& a, const Finding& b) { return a.tier < b.tier; });
    return std::move(items_);
  }

 private:
  std::vector<Finding> items_;
};

FindingRow& about(FindingRow& row, std::string subject, std::vector<int> ranks) {
  row.subject = std::move(subject);
  row.ranks = std::move(ranks);
  return row;
}

std::string rankSubject(int rank) { return "rank " + std::to_string(rank); }

// A cost over `steps` steps of `step_us`, taken from `takers` ranks' time, per step and as a
// share. More than the takers' whole time: the steps were miscounted (a process that dropped
// records shows fewer of them), so none is set rather than a wrong one.
void perStep(double cost_us, double steps, double step_us, int takers, FindingRow& row) {
  if (steps < 2 || step_us <= 0 || takers < 1 || cost_us > steps * step_us * takers) return;
  row.cost_per_step_us = cost_us / steps;
  row.cost_share = cost_us / (steps * step_us * takers);
}

// What fixing a culprit buys: the replay's share of the run's time (wait_attribution.h), per
// step where the job's steps are known. NaN: it was never replayed.
void stepSaved(double share, const JobSteps& steps, FindingRow& row) {
  if (std::isnan(share)) return;
  row.step_saved_share = share;
  if (steps.steps >= 2 && steps.mean_step_us > 0) row.step_saved_us = share * steps.mean_step_us;
}

// When the ranks were late, with the outer bounds set on the row.
facts::LateWhen whenLate(const LatenessHeatmap& heatmap, std::span<const int> ranks, FindingRow& row) {
  facts::LateWhen when{lateStretches(heatmap, ranks), false};
  if (when.stretches.empty()) return when;
  row.from_us = when.stretches.front().from_us;
  row.to_us = when.stretches.back().to_us;
  const double span_us = heatmap.bin_us * static_cast<double>(heatmap.mean_lateness_us.front().size());
  when.throughout = when.stretches.size() == 1 && row.from_us <= 0.05 * span_us && row.to_us >= 0.95 * span_us;
  return when;
}

// (rank, records its processes dropped) for the ranks that dropped any, most first.
std::vector<std::pair<int, uint64_t>> dropsByRank(const RunModel& model) {
  std::map<int, uint64_t> by_rank;
  for (const ProcessInfo& p : model.processes)
    if (p.dropped_records > 0) by_rank[p.rank] += p.dropped_records;
  std::vector<std::pair<int, uint64_t>> drops(by_rank.begin(), by_rank.end());
  std::stable_sort(drops.begin(), drops.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return drops;
}

// A --from/--to window no op started in: said first, with when the ops did run.
void addEmptyWindowFinding(const RunSummary& run, Findings& out) {
  if (run.windowed && run.ops == 0) out.add(FindingTier::kWindow, "empty_window", "run", facts::EmptyWindow{run.first_op_utc_ns, run.last_op_utc_ns});
}

void addRunFindings(const RunSummary& run, const RunModel& model, uint64_t collectives_lost, Findings& out) {
  const facts::RunLoss loss{&run, {}, collectives_lost};
  if (run.files_left_open > 0) about(out.add(FindingTier::kLoss, "left_open", "rank", loss).row, "", run.ranks_left_open);
  if (run.files_being_written > 0) out.add(FindingTier::kLoss, "still_written", "run", loss);
  if (!run.missing_ranks.empty()) about(out.add(FindingTier::kLoss, "missing_ranks", "rank", loss).row, "", run.missing_ranks);
  if (run.damaged_files > 0) out.add(FindingTier::kLoss, "damaged_files", "run", loss);
  if (run.files > run.processes) out.add(FindingTier::kLoss, "skipped_files", "run", loss);
  if (run.dropped_records == 0 && run.untracked_events == 0) return;
  facts::RunLoss dropped = loss;
  dropped.drops = dropsByRank(model);
  std::vector<int> ranks;
  for (const auto& [rank, n] : dropped.drops) ranks.push_back(rank);
  about(out.add(FindingTier::kLoss, "dropped_records", "run", std::move(dropped)).row, "", ranks);
}

void addMismatchFinding(const Report& r, Findings& out) {
  if (r.mismatches_total == 0) return;
  const MismatchRow& m = r.mismatches.front();
  FindingRow& row = out.add(FindingTier::kLoss, "mismatch", "communicator", facts::Mismatch{r.mismatches_total, &m}).row;
  about(row, fmt::commLabel(m.comm, m.comm_name), m.comm_ranks ? std::vector<int>{} : m.missing_ranks);
}

// Links crossed only by collectives that crossed other links too (no transfer of their own,
// no proxy timing): those the same ops crossed read alike, at the pace of the slowest of them.
bool onlyModelled(const SlowLinkRow& l) { return l.direct_ops == 0 && !judgedByWire(l); }

bool readAlike(const SlowLinkRow& a, const SlowLinkRow& b) {
  return a.inter_host == b.inter_host && std::abs(a.achieved_gbs - b.achieved_gbs) <= 0.02 * std::max(a.achieved_gbs, b.achieved_gbs);
}

// NCCL's proxy steps the run recorded, timing a link or not: whether to suggest recording them.
uint64_t proxyStepsRecorded(const RunModel& run) {
  uint64_t n = 0;
  for (const ProcessTimeline& t : run.timelines) n += t.proxy_wire.recorded();
  return n;
}

// Every inter-host link reads alike, none judged: one ring's collectives alone crossed them,
// and a ring's collectives run at its slowest link's pace, which may be slow or not. (Inside a
// host, NVLink and PCIe paths are not single cables a ring can be held up by.)
void addRingNote(const StragglerReport& s, uint64_t proxy_steps, Findings& out) {
  std::vector<const SlowLinkRow*> inter;
  for (const SlowLinkRow& l : s.links)
    if (l.inter_host && l.ops > 0) inter.push_back(&l);
  if (inter.size() < static_cast<size_t>(kMinLinksOfAKind) ||
      !std::all_of(inter.begin(), inter.end(), [&](const SlowLinkRow* l) { return !l->flagged && onlyModelled(*l) && readAlike(*l, *inter.front()); }))
    return;
  out.add(FindingTier::kNote, "links_not_told_apart", "run", facts::LinksNotToldApart{inter.size(), inter.front()->achieved_gbs, proxy_steps});
}

// A host whose ranks create delays together is one culprit, named as the host: its ranks
// are not named again one by one (onFlaggedHost).
void addHostStragglerFindings(const StragglerReport& s, const JobSteps& steps, Findings& out) {
  for (const HostStragglerRow& h : s.hosts) {
    if (!h.flagged) continue;
    Finding& f = out.add(FindingTier::kCulprit, "slow_host", "host");
    const int others = steps.ranks - static_cast<int>(h.ranks.size());
    f.facts = facts::SlowHost{&h, steps, others, whenLate(s.heatmap, h.ranks, f.row)};
    stepSaved(h.step_saved_share, steps, f.row);
    perStep(h.wait_caused_us, steps.steps, steps.mean_step_us, others, f.row);
    about(f.row, "host " + h.host, h.ranks);
    f.row.cost_us = h.wait_caused_us;
    f.row.confidence = h.confidence;
  }
}

void addStragglerFindings(const StragglerReport& s, const JobSteps& steps, Findings& out) {
  addHostStragglerFindings(s, steps, out);
  const bool any = std::any_of(s.ranks.begin(), s.ranks.end(), [](const StragglerRow& r) { return r.flagged; });
  const bool any_host = std::any_of(s.hosts.begin(), s.hosts.end(), [](const HostStragglerRow& h) { return h.flagged; });
  if (!any && !any_host) {
    if (!s.ranks.empty()) out.add(FindingTier::kNote, "no_straggler", "run", facts::NoStraggler{&s.ranks.front()});
    return;
  }
  for (const StragglerRow& r : s.ranks) {
    if (!r.flagged || onFlaggedHost(s, r.rank)) continue;
    Finding& f = out.add(FindingTier::kCulprit, "straggler", "rank");
    f.facts = facts::Straggler{&r, steps, whenLate(s.heatmap, std::span<const int>(&r.rank, 1), f.row)};
    stepSaved(r.step_saved_share, steps, f.row);
    perStep(r.wait_caused_us, steps.steps, steps.mean_step_us, steps.ranks - 1, f.row);
    about(f.row, rankSubject(r.rank), {r.rank});
    f.row.cost_us = r.wait_caused_us;
    f.row.confidence = r.confidence;
  }
}

// A flagged link is named on its own when its own evidence shows it (its transfers, or the
// proxy's timing); flagged links that only the same collectives crossed are one finding: one
// of them (or more) is slow, and the ops cannot say which.
void addLinkFindings(const StragglerReport& s, uint64_t proxy_steps, Findings& out) {
  std::vector<const SlowLinkRow*> alike;
  for (const SlowLinkRow& l : s.links) {
    if (!l.flagged) continue;
    if (onlyModelled(l) && std::any_of(s.links.begin(), s.links.end(), [&](const SlowLinkRow& o) { return &o != &l && o.flagged && onlyModelled(o) && readAlike(o, l); })) {
      alike.push_back(&l);
      continue;
    }
    FindingRow& row = out.add(FindingTier::kCulprit, "slow_link", "link", facts::SlowLink{&l}).row;
    about(row, rankSubject(l.a) + " <-> " + rankSubject(l.b), {l.a, l.b});
    row.confidence = l.confidence;
  }
  while (!alike.empty()) {
    facts::SlowLinkAmong group{{}, proxy_steps};
    std::vector<int> ranks;
    double confidence = 0;
    for (const SlowLinkRow* l : alike) {
      if (!readAlike(*l, *alike.front())) continue;
      group.links.push_back(l);
      ranks.insert(ranks.end(), {l->a, l->b});
      confidence = std::max(confidence, l->confidence);
    }
    std::erase_if(alike, [&](const SlowLinkRow* l) { return std::find(group.links.begin(), group.links.end(), l) != group.links.end(); });
    std::sort(ranks.begin(), ranks.end());
    ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
    const std::string subject = "links " + linkPairs(group.links);
    FindingRow& row = out.add(FindingTier::kCulprit, "slow_link_among", "link", std::move(group)).row;
    about(row, subject, ranks);
    row.confidence = confidence;
  }
}

// When a communicator got slow: its busBw over time fell and stayed down.
void addSlowdownFinding(const BandwidthSeries& series, Findings& out) {
  const BandwidthDrop drop = largestBandwidthDrop(series);
  if (drop.row < 0) return;
  const BandwidthSeriesRow& row = series.rows[static_cast<size_t>(drop.row)];
  about(out.add(FindingTier::kCulprit, "slowdown", "communicator", facts::Slowdown{&row, drop}).row, fmt::commLabel(row.comm, row.comm_name), {})
      .from_us = drop.at_us;
}

void addOverlapFinding(const std::vector<OverlapRow>& rows, const std::vector<CallPathRow>& paths, Findings& out) {
  const OverlapRow* worst = nullptr;
  for (const OverlapRow& r : rows)
    if (r.available && (worst == nullptr || r.exposed_us > worst->exposed_us)) worst = &r;
  if (worst != nullptr) {
    FindingRow& row = out.add(FindingTier::kCost, "exposed_communication", "rank", facts::Exposed{worst, mostExposedPath(paths)}).row;
    perStep(worst->exposed_us, worst->step_count, worst->mean_step_us, 1, row);
    about(row, rankSubject(worst->rank), {worst->rank}).cost_us = worst->exposed_us;
  } else if (!rows.empty()) {
    // The reason of a rank that did communicate: one whose file was empty says less.
    const auto typical = std::max_element(rows.begin(), rows.end(), [](const OverlapRow& a, const OverlapRow& b) { return a.comm_us < b.comm_us; });
    out.add(FindingTier::kNote, "overlap_unavailable", "run", facts::OverlapUnavailable{typical->reason});
  }
}

// A pipeline bubble worth naming: the rank that waited longest on one peer in sends and
// receives, when that is at least a tenth of its step.
void addPeerWaitFinding(const std::vector<PeerWaitRow>& rows, Findings& out) {
  constexpr double kMinStepShare = 10.0;
  const auto top = std::max_element(rows.begin(), rows.end(), [](const PeerWaitRow& a, const PeerWaitRow& b) {
    return a.step_share_pct < b.step_share_pct;
  });
  if (top == rows.end() || top->step_share_pct < kMinStepShare) return;
  facts::PipelineBubble bubble{{&*top}};
  for (const PeerWaitRow& r : rows)
    if (&r != &*top && r.step_share_pct >= 0.9 * top->step_share_pct) bubble.ranks.push_back(&r);
  std::stable_sort(bubble.ranks.begin() + 1, bubble.ranks.end(),
                   [](const PeerWaitRow* a, const PeerWaitRow* b) { return a->step_share_pct > b->step_share_pct; });
  std::vector<int> ranks;
  for (const PeerWaitRow* r : bubble.ranks) ranks.insert(ranks.end(), {r->rank, r->peer});
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  const std::string subject = bubble.ranks.size() == 1 ? rankSubject(top->rank) : std::to_string(bubble.ranks.size()) + " ranks";
  FindingRow& row = out.add(FindingTier::kCost, "pipeline_bubble", "rank", std::move(bubble)).row;
  about(row, subject, ranks).cost_us = top->wait_us;
  row.cost_per_step_us = top->wait_per_step_us;
  row.cost_share = top->step_share_pct / 100;
}

// The ranks whose CPUs waited longest and shortest for their GPUs in CUDA sync calls.
void addCudaSyncFinding(const std::vector<CudaSyncRow>& rows, const std::vector<OverlapRow>& overlap, Findings& out) {
  if (rows.empty()) return;
  const auto [least, most] = std::minmax_element(
      rows.begin(), rows.end(), [](const CudaSyncRow& a, const CudaSyncRow& b) { return a.blocked_us < b.blocked_us; });
  uint64_t calls = 0;
  for (const CudaSyncCallRow& c : most->calls) calls += c.stats.count;
  const auto steps = std::find_if(overlap.begin(), overlap.end(), [&](const OverlapRow& o) { return o.rank == most->rank; });
  const double step_us = steps == overlap.end() ? 0 : steps->mean_step_us;
  FindingRow& row = out.add(FindingTier::kCost, "cuda_sync", "rank", facts::CudaSync{&*most, rows.size() > 1 ? &*least : nullptr, calls, step_us}).row;
  if (steps != overlap.end()) perStep(most->blocked_us, steps->step_count, step_us, 1, row);
  about(row, rankSubject(most->rank), {most->rank}).cost_us = most->blocked_us;
}

// The group with the lowest busBw among those moving at least 1 MiB (small ops are
// latency-bound, and their busBw says little about the links).
void addBandwidthFinding(const std::vector<BandwidthRow>& rows, Findings& out) {
  const BandwidthRow* worst = nullptr;
  for (const BandwidthRow& r : rows)
    if (r.bytes >= (1u << 20) && r.busbw_gbs_p50 > 0 && (worst == nullptr || r.busbw_gbs_p50 < worst->busbw_gbs_p50)) worst = &r;
  if (worst != nullptr) about(out.add(FindingTier::kCost, "lowest_bandwidth", "communicator", facts::LowestBandwidth{worst}).row, fmt::commLabel(worst->comm, worst->comm_name), {});
}

}  // namespace

const char* tierName(FindingTier tier) { return kTierNames[static_cast<int>(tier)]; }

std::string linkPairs(const std::vector<const SlowLinkRow*>& links) {
  std::string out;
  for (size_t i = 0; i < links.size() && i < kLinksNamed; ++i) out += (i > 0 ? ", " : "") + std::to_string(links[i]->a) + " <-> " + std::to_string(links[i]->b);
  return links.size() > kLinksNamed ? out + " and " + std::to_string(links.size() - kLinksNamed) + " more" : out;
}

JobSteps jobSteps(const std::vector<OverlapRow>& rows, int ranks) {
  std::vector<double> counts, lengths;
  for (const OverlapRow& r : rows)
    if (r.step_count >= 2 && r.mean_step_us > 0) counts.push_back(r.step_count), lengths.push_back(r.mean_step_us);
  return {median(counts), median(lengths), ranks};
}

std::vector<Finding> findFindings(const Report& report, const RunModel& run) {
  const JobSteps steps = jobSteps(report.overlap, report.run.ranks);
  Findings findings;
  addEmptyWindowFinding(report.run, findings);
  addRunFindings(report.run, run, report.collectives_lost_to_drops, findings);
  addMismatchFinding(report, findings);
  const uint64_t proxy_steps = proxyStepsRecorded(run);
  addRingNote(report.stragglers, proxy_steps, findings);  // a note, said before "No straggler", which ends the list
  addStragglerFindings(report.stragglers, steps, findings);
  addLinkFindings(report.stragglers, proxy_steps, findings);
  addSlowdownFinding(report.bandwidth_series, findings);
  addOverlapFinding(report.overlap, report.call_paths, findings);
  addPeerWaitFinding(report.peer_waits, findings);
  addCudaSyncFinding(report.cuda_sync, report.overlap, findings);
  addBandwidthFinding(report.bandwidth, findings);
  return std::move(findings).inOrder();
}

}  // namespace commtrace::report
