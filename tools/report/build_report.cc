#include "tools/report/build_report.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <map>
#include <string>

#include "tools/report/analyses/advice.h"
#include "tools/report/analyses/bandwidth.h"
#include "tools/report/analyses/comm_matrix.h"
#include "tools/report/analyses/cuda_sync.h"
#include "tools/report/analyses/kernel_breakdown.h"
#include "tools/report/analyses/lateness_heatmap.h"
#include "tools/report/analyses/mismatches.h"
#include "tools/report/analyses/overlap.h"
#include "tools/report/analyses/parallelism.h"
#include "tools/report/analyses/peer_waits.h"
#include "tools/report/analyses/slow_links.h"
#include "tools/report/analyses/stragglers.h"
#include "tools/report/evidence_words.h"
#include "tools/report/format.h"
#include "tools/report/load/run_loader.h"
#include "tools/report/load/run_summary.h"
#include "tools/report/load/stats.h"

namespace commtrace::report {
namespace {

// Findings in the order a user must read them: what makes the rest incomplete or wrong
// first (a window with no op, dead or hung ranks, lost data, mismatches), then the culprits
// (every one), then what communication costs, and what could not be decided last.
enum class Tier : uint8_t { kWindow, kLoss, kCulprit, kCost, kNote };

constexpr const char* kTierNames[] = {"window", "loss", "culprit", "cost", "note"};

struct Findings {
  std::vector<std::pair<Tier, FindingRow>> items;
  // The finding's row, to fill its other fields in (until the next add).
  FindingRow& add(Tier tier, std::string kind, std::string level, std::string text) {
    FindingRow row;
    row.finding = std::move(text);
    row.kind = std::move(kind);
    row.severity = kTierNames[static_cast<int>(tier)];
    row.level = std::move(level);
    return items.emplace_back(tier, std::move(row)).second;
  }
  void into(Report& report) {
    std::stable_sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto& [tier, row] : items) {
      report.findings.push_back(row.finding);
      report.finding_details.push_back(std::move(row));
    }
  }
};

FindingRow& about(FindingRow& row, std::string subject, std::vector<int> ranks) {
  row.subject = std::move(subject);
  row.ranks = std::move(ranks);
  return row;
}

std::string rankSubject(int rank) { return "rank " + std::to_string(rank); }

// The job's steps as the overlap table counts them: the median rank's count and mean length
// (ranks with two steps or more); what a finding costs per step is said against them.
struct JobSteps {
  double steps = 0;
  double mean_step_us = 0;
  int ranks = 0;
};

JobSteps jobSteps(const std::vector<OverlapRow>& rows, int ranks) {
  std::vector<double> counts, lengths;
  for (const OverlapRow& r : rows)
    if (r.step_count >= 2 && r.mean_step_us > 0) counts.push_back(r.step_count), lengths.push_back(r.mean_step_us);
  return {median(counts), median(lengths), ranks};
}

// A cost over `steps` steps of `step_us`, taken from `takers` ranks' time: set on the row and
// said as ", X per step of S (P of whose)".
std::string perStep(double cost_us, double steps, double step_us, int takers, const char* whose, FindingRow& row) {
  if (steps < 2 || step_us <= 0 || takers < 1) return "";
  // More than the takers' whole time: the steps were miscounted (a process that dropped
  // records shows fewer of them), so no figure per step is given rather than a wrong one.
  if (cost_us > steps * step_us * takers) return "";
  row.cost_per_step_us = cost_us / steps;
  row.cost_share = cost_us / (steps * step_us * takers);
  return ", " + fmt::duration(row.cost_per_step_us) + " per step of " + fmt::duration(step_us) + " (" + fmt::percent(row.cost_share) +
         " of " + whose + ")";
}

std::string sentence(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string sentence(const char* format, ...) {
  va_list args, again;
  va_start(args, format);
  va_copy(again, args);
  std::string out(static_cast<size_t>(std::max(0, std::vsnprintf(nullptr, 0, format, args))), '\0');
  std::vsnprintf(out.data(), out.size() + 1, format, again);
  va_end(again);
  va_end(args);
  return out;
}

// When the ranks were late, in words, with the outer bounds set on the row.
std::string whenLate(const LatenessHeatmap& heatmap, std::span<const int> ranks, FindingRow& row) {
  const std::vector<TimeStretch> stretches = lateStretches(heatmap, ranks);
  if (stretches.empty()) return "";
  row.from_us = stretches.front().from_us;
  row.to_us = stretches.back().to_us;
  const double span_us = heatmap.bin_us * static_cast<double>(heatmap.mean_lateness_us.front().size());
  if (stretches.size() == 1 && row.from_us <= 0.05 * span_us && row.to_us >= 0.95 * span_us) return ", throughout the run";
  constexpr size_t kNamed = 3;
  std::string when = ", late";
  for (size_t i = 0; i < stretches.size() && i < kNamed; ++i)
    when += std::string(i == 0 ? "" : " and") + " from +" + fmt::duration(stretches[i].from_us) + " to +" + fmt::duration(stretches[i].to_us);
  if (stretches.size() > kNamed) when += " and in " + std::to_string(stretches.size() - kNamed) + " more stretches";
  return when + " on the aligned timeline";
}

// What fixing a culprit buys, set on the row and said as " slows every step by about X (P of
// its S)": the replay's share of the run's time (wait_attribution.h) over the job's steps.
std::string stepSaved(double share, const JobSteps& steps, FindingRow& row) {
  if (std::isnan(share)) return " (what fixing it would save was not estimated: it was never among the costliest origins replayed)";
  row.step_saved_share = share;
  if (steps.steps < 2 || steps.mean_step_us <= 0) return sentence(" slows the run by about %s (estimated by replaying it without its delays)", fmt::percent(share).c_str());
  row.step_saved_us = share * steps.mean_step_us;
  return sentence(" slows every step by about %s (%s of its %s; estimated by replaying the run without its delays)",
                  fmt::duration(row.step_saved_us).c_str(), fmt::percent(share).c_str(), fmt::duration(steps.mean_step_us).c_str());
}

// The waiting a culprit's delays caused, in rank-time: "X of the others' time in all, Y per
// step of S (P of their time)".
std::string rankTime(double wait_us, const JobSteps& steps, int takers, FindingRow& row) {
  const std::string per_step = perStep(wait_us, steps.steps, steps.mean_step_us, takers, "their time", row);
  return fmt::duration(wait_us) + " of the others' time in all" + per_step;
}

// A host whose ranks create delays together is one culprit, named as the host: its ranks
// are not named again one by one (onFlaggedHost).
void addHostStragglerFindings(const StragglerReport& s, const JobSteps& steps, Findings& out) {
  for (const HostStragglerRow& h : s.hosts) {
    if (!h.flagged) continue;
    FindingRow& row = out.add(Tier::kCulprit, "slow_host", "host", "");
    const std::string when = whenLate(s.heatmap, h.ranks, row);
    const int others = steps.ranks - static_cast<int>(h.ranks.size());
    const std::string saved = stepSaved(h.step_saved_share, steps, row);
    row.finding = sentence("Straggler host: %s (rank(s) %s)%s: most of its ranks created delays that made the others wait, %s%s "
                           "(confidence %.2f of 1); no one rank of it caused most of that, so the host, not one rank, is the place to look.",
                           h.host.c_str(), fmt::rankList(h.ranks).c_str(), saved.c_str(),
                           rankTime(h.wait_caused_us, steps, others, row).c_str(), when.c_str(), h.confidence);
    about(row, "host " + h.host, h.ranks);
    row.cost_us = h.wait_caused_us;
    row.confidence = h.confidence;
  }
}

void addStragglerFindings(const StragglerReport& s, const JobSteps& steps, Findings& out) {
  addHostStragglerFindings(s, steps, out);
  const bool any = std::any_of(s.ranks.begin(), s.ranks.end(), [](const StragglerRow& r) { return r.flagged; });
  const bool any_host = std::any_of(s.hosts.begin(), s.hosts.end(), [](const HostStragglerRow& h) { return h.flagged; });
  if (!any && !any_host) {
    if (!s.ranks.empty())
      out.add(Tier::kNote, "no_straggler", "run",
              sentence("No straggler: no rank or host creates the delays others wait for (the rank whose delays caused the most "
                       "waiting, rank %d, created the delay in %s of its %llu synchronizations, where chance gives %s).",
                       s.ranks.front().rank, fmt::percent(s.ranks.front().late_fraction).c_str(),
                       static_cast<unsigned long long>(s.ranks.front().instances), fmt::percent(s.ranks.front().chance_fraction).c_str()));
    return;
  }
  for (const StragglerRow& r : s.ranks) {
    if (!r.flagged || onFlaggedHost(s, r.rank)) continue;
    FindingRow& row = out.add(Tier::kCulprit, "straggler", "rank", "");
    const std::string when = whenLate(s.heatmap, std::span<const int>(&r.rank, 1), row);
    const std::string saved = stepSaved(r.step_saved_share, steps, row);
    row.finding = sentence("Straggler: rank %d (%s)%s. It created the delay in %s of its %llu synchronizations and its delays made the "
                           "others wait %s%s; cause: %s (confidence %.2f of 1). Evidence: %s.",
                           r.rank, r.host.c_str(), saved.c_str(), fmt::percent(r.late_fraction).c_str(),
                           static_cast<unsigned long long>(r.instances), rankTime(r.wait_caused_us, steps, steps.ranks - 1, row).c_str(),
                           when.c_str(), r.cls.c_str(), r.confidence, evidenceWords(r).c_str());
    about(row, rankSubject(r.rank), {r.rank});
    row.cost_us = r.wait_caused_us;
    row.confidence = r.confidence;
  }
}

// Links crossed only by collectives that crossed other links too (no transfer of their own,
// no proxy timing): those the same ops crossed read alike, at the pace of the slowest of them.
bool onlyModelled(const SlowLinkRow& l) { return l.direct_ops == 0 && !judgedByWire(l); }

bool readAlike(const SlowLinkRow& a, const SlowLinkRow& b) {
  return a.inter_host == b.inter_host && std::abs(a.achieved_gbs - b.achieved_gbs) <= 0.02 * std::max(a.achieved_gbs, b.achieved_gbs);
}

std::string pairList(const std::vector<const SlowLinkRow*>& links, size_t at_most) {
  std::string out;
  for (size_t i = 0; i < links.size() && i < at_most; ++i) out += (i > 0 ? ", " : "") + std::to_string(links[i]->a) + " <-> " + std::to_string(links[i]->b);
  return links.size() > at_most ? out + " and " + std::to_string(links.size() - at_most) + " more" : out;
}

constexpr const char* kProxyHint = "recording NCCL's proxy steps (COMMTRACE_PROXY_EVENTS=1) times each link's sends on the wire";

// A flagged link is named on its own when its own evidence shows it (its transfers, or the
// proxy's timing); flagged links that only the same collectives crossed are one finding: one
// of them (or more) is slow, and the ops cannot say which.
void addLinkFindings(const StragglerReport& s, Findings& out) {
  std::vector<const SlowLinkRow*> alike;
  for (const SlowLinkRow& l : s.links) {
    if (!l.flagged) continue;
    const char* kind = l.inter_host ? "inter-host" : "intra-host";
    if (onlyModelled(l) && std::any_of(s.links.begin(), s.links.end(), [&](const SlowLinkRow& o) { return &o != &l && o.flagged && onlyModelled(o) && readAlike(o, l); })) {
      alike.push_back(&l);
      continue;
    }
    FindingRow& row = out.add(
        Tier::kCulprit, "slow_link", "link",
        judgedByWire(l) ? sentence("Slow link: rank %d <-> rank %d (%s) carried its bytes at %s on the wire as NCCL's proxy timed its %llu "
                                   "send steps, against a median of %s for %s links; every op crossing it ran at its pace (at best %s).",
                                   l.a, l.b, l.hosts.c_str(), fmt::gbs(l.wire_gbs).c_str(), static_cast<unsigned long long>(l.wire_steps),
                                   fmt::gbs(l.wire_median_gbs).c_str(), kind, fmt::gbs(l.achieved_gbs).c_str())
                        : sentence("Slow link: rank %d <-> rank %d (%s) reached at best %s over %llu ops, against a median of %s for %s links.",
                                   l.a, l.b, l.hosts.c_str(), fmt::gbs(l.achieved_gbs).c_str(), static_cast<unsigned long long>(l.ops),
                                   fmt::gbs(l.peer_median_gbs).c_str(), kind));
    about(row, rankSubject(l.a) + " <-> " + rankSubject(l.b), {l.a, l.b});
    row.confidence = l.confidence;
  }
  while (!alike.empty()) {
    std::vector<const SlowLinkRow*> group;
    std::vector<int> ranks;
    double confidence = 0;
    for (const SlowLinkRow* l : alike) {
      if (!readAlike(*l, *alike.front())) continue;
      group.push_back(l);
      ranks.insert(ranks.end(), {l->a, l->b});
      confidence = std::max(confidence, l->confidence);
    }
    std::erase_if(alike, [&](const SlowLinkRow* l) { return std::find(group.begin(), group.end(), l) != group.end(); });
    std::sort(ranks.begin(), ranks.end());
    ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
    const SlowLinkRow& l = *group.front();
    FindingRow& row = out.add(Tier::kCulprit, "slow_link_among", "link",
                              sentence("Slow link among %zu %s links (%s): each reached at best %s, against a median of %s; only the same "
                                       "collectives crossed them, which run at the pace of their slowest link, so which of them is slow "
                                       "cannot be told from their times; %s.",
                                       group.size(), l.inter_host ? "inter-host" : "intra-host", pairList(group, 8).c_str(),
                                       fmt::gbs(l.achieved_gbs).c_str(), fmt::gbs(l.peer_median_gbs).c_str(), kProxyHint));
    about(row, "links " + pairList(group, 8), ranks);
    row.confidence = confidence;
  }
}

// Every inter-host link reads alike, none judged: one ring's collectives alone crossed them,
// and a ring's collectives run at its slowest link's pace, which may be slow or not. (Inside a
// host, NVLink and PCIe paths are not single cables a ring can be held up by.)
void addRingNote(const StragglerReport& s, Findings& out) {
  std::vector<const SlowLinkRow*> inter;
  for (const SlowLinkRow& l : s.links)
    if (l.inter_host && l.ops > 0) inter.push_back(&l);
  if (inter.size() < static_cast<size_t>(kMinLinksOfAKind) ||
      !std::all_of(inter.begin(), inter.end(), [&](const SlowLinkRow* l) { return !l->flagged && onlyModelled(*l) && readAlike(*l, *inter.front()); }))
    return;
  const std::string gbs = fmt::gbs(inter.front()->achieved_gbs);
  out.add(Tier::kNote, "links_not_told_apart", "run",
          sentence("Links inside rings: the %zu inter-host links measured were crossed only by collectives that crossed the others too, "
                   "and each reached %s at best. A ring runs at the pace of its slowest link, so whether one of them is slow cannot be "
                   "told from collective times: compare %s with what these hosts' network carries (nccl-tests' busBw); %s.",
                   inter.size(), gbs.c_str(), gbs.c_str(), kProxyHint));
}

void addOverlapFinding(const std::vector<OverlapRow>& rows, Findings& out) {
  const OverlapRow* worst = nullptr;
  for (const OverlapRow& r : rows)
    if (r.available && (worst == nullptr || r.exposed_us > worst->exposed_us)) worst = &r;
  if (worst != nullptr) {
    FindingRow& row = out.add(Tier::kCost, "exposed_communication", "rank", "");
    const std::string cost = perStep(worst->exposed_us, worst->step_count, worst->mean_step_us, 1, "its time", row);
    row.finding = sentence("Exposed communication: rank %d spends %s in communication kernels, %s of it (%s) not hidden behind "
                           "compute%s.",
                           worst->rank, fmt::duration(worst->comm_us).c_str(), fmt::duration(worst->exposed_us).c_str(),
                           fmt::percent(worst->comm_us > 0 ? worst->exposed_us / worst->comm_us : 0.0).c_str(), cost.c_str());
    about(row, rankSubject(worst->rank), {worst->rank}).cost_us = worst->exposed_us;
  } else if (!rows.empty()) {
    // The reason of a rank that did communicate: one whose file was empty says less.
    const auto typical = std::max_element(rows.begin(), rows.end(), [](const OverlapRow& a, const OverlapRow& b) { return a.comm_us < b.comm_us; });
    out.add(Tier::kNote, "overlap_unavailable", "run", "Overlap of communication with compute: not available (" + typical->reason + ").");
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
  FindingRow& row = out.add(Tier::kCost, "pipeline_bubble", "rank",
                            sentence("Pipeline bubble: rank %d waited for rank %d in %llu of %llu sends and receives, %s in all: %s "
                                     "per step, %s of its step.",
                                     top->rank, top->peer, static_cast<unsigned long long>(top->waited),
                                     static_cast<unsigned long long>(top->transfers), fmt::duration(top->wait_us).c_str(),
                                     fmt::duration(top->wait_per_step_us).c_str(), fmt::percent(top->step_share_pct / 100).c_str()));
  about(row, rankSubject(top->rank), {top->rank, top->peer}).cost_us = top->wait_us;
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
  const CudaSyncCallRow& top = most->calls.front();
  FindingRow& row = out.add(Tier::kCost, "cuda_sync", "rank", "");
  const auto steps = std::find_if(overlap.begin(), overlap.end(), [&](const OverlapRow& o) { return o.rank == most->rank; });
  const std::string cost = steps == overlap.end() ? "" : perStep(most->blocked_us, steps->step_count, steps->mean_step_us, 1, "its time", row);
  std::string finding = sentence("CPU blocked in CUDA synchronisation: rank %d the longest, %s in %llu calls (%s of it in %s)%s",
                                 most->rank, fmt::duration(most->blocked_us).c_str(), static_cast<unsigned long long>(calls),
                                 fmt::duration(top.stats.total_us).c_str(), top.call.c_str(), cost.c_str());
  if (rows.size() > 1) finding += sentence("; rank %d the shortest, %s", least->rank, fmt::duration(least->blocked_us).c_str());
  row.finding = finding + ".";
  about(row, rankSubject(most->rank), {most->rank}).cost_us = most->blocked_us;
}

// The group with the lowest busBw among those moving at least 1 MiB (small ops are
// latency-bound, and their busBw says little about the links).
void addBandwidthFinding(const std::vector<BandwidthRow>& rows, Findings& out) {
  const BandwidthRow* worst = nullptr;
  for (const BandwidthRow& r : rows)
    if (r.bytes >= (1u << 20) && r.busbw_gbs_p50 > 0 && (worst == nullptr || r.busbw_gbs_p50 < worst->busbw_gbs_p50)) worst = &r;
  if (worst == nullptr) return;
  // Point-to-point rows have no algorithm or protocol.
  const std::string how = worst->algo.empty() ? "" : ", " + worst->algo + "/" + worst->proto;
  const std::string comm = fmt::commLabel(worst->comm, worst->comm_name);
  FindingRow& row = out.add(Tier::kCost, "lowest_bandwidth", "communicator",
                            sentence("Lowest bandwidth: %s on %s (%s%s): busBw %s at p50 over %llu instances (p50 time %s).",
                                     worst->func.c_str(), comm.c_str(), worst->bucket.c_str(), how.c_str(),
                                     fmt::gbs(worst->busbw_gbs_p50).c_str(), static_cast<unsigned long long>(worst->count),
                                     fmt::duration(worst->time_us_p50).c_str()));
  about(row, comm, {});
}

// When a communicator got slow: its busBw over time fell and stayed down.
void addSlowdownFinding(const BandwidthSeries& series, Findings& out) {
  const BandwidthDrop drop = largestBandwidthDrop(series);
  if (drop.row < 0) return;
  const BandwidthSeriesRow& row = series.rows[static_cast<size_t>(drop.row)];
  const std::string comm = fmt::commLabel(row.comm, row.comm_name);
  FindingRow& finding = out.add(Tier::kCulprit, "slowdown", "communicator",
                                sentence("Slowdown: busBw of %s on %s fell from %s to %s from +%s on the aligned timeline (%llu of its "
                                         "%llu instances after it).",
                                         row.func.c_str(), comm.c_str(), fmt::gbs(drop.before_gbs).c_str(),
                                         fmt::gbs(drop.after_gbs).c_str(), fmt::duration(drop.at_us).c_str(),
                                         static_cast<unsigned long long>(drop.ops_after), static_cast<unsigned long long>(drop.ops)));
  about(finding, comm, {}).from_us = drop.at_us;
}

void addMismatchFinding(const Report& r, Findings& out) {
  if (r.mismatches_total == 0) return;
  const MismatchRow& m = r.mismatches.front();
  std::string ranks;
  for (int rank : m.missing_ranks) ranks += (ranks.empty() ? "" : ", ") + std::to_string(rank);
  const std::string comm = fmt::commLabel(m.comm, m.comm_name);
  FindingRow& row = out.add(Tier::kLoss, "mismatch", "communicator",
                            sentence("Mismatches and hangs: %llu findings of ops not recorded by every member or never finished; "
                                     "first: %s #%llu on %s, %s on %s %s (%s).",
                                     static_cast<unsigned long long>(r.mismatches_total), m.func.c_str(),
                                     static_cast<unsigned long long>(m.seq), comm.c_str(), m.kind.c_str(),
                                     m.comm_ranks ? "comm rank(s)" : "rank(s)", ranks.c_str(), m.detail.c_str()));
  about(row, comm, m.comm_ranks ? std::vector<int>{} : m.missing_ranks);
}

// A --from/--to window no op started in: said first, with when the ops did run.
void addEmptyWindowFinding(const RunSummary& run, Findings& out) {
  if (!run.windowed || run.ops != 0) return;
  std::string found = "No op started in the --from/--to window";
  if (run.last_op_utc_ns != 0)
    found += "; the run's ops ran from " + fmt::utcTime(run.first_op_utc_ns) + " to " + fmt::utcTime(run.last_op_utc_ns);
  out.add(Tier::kWindow, "empty_window", "run", found + ".");
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

// " (rank 0: 11876, rank 3: 12)": the three that dropped most.
std::string dropsWords(const std::vector<std::pair<int, uint64_t>>& drops) {
  constexpr size_t kNamed = 3;
  std::string out;
  for (size_t i = 0; i < drops.size() && i < kNamed; ++i)
    out += std::string(i == 0 ? " (" : ", ") + "rank " + std::to_string(drops[i].first) + ": " + std::to_string(drops[i].second);
  if (drops.size() > kNamed) out += " and " + std::to_string(drops.size() - kNamed) + " more ranks";
  return out.empty() ? out : out + ")";
}

void addRunFindings(const RunSummary& run, const RunModel& model, uint64_t collectives_lost, Findings& out) {
  if (run.files_left_open > 0)
    about(out.add(Tier::kLoss, "left_open", "rank", "Left open: rank(s) " + fmt::rankList(run.ranks_left_open) + " stopped writing their trace files without closing them (last written " +
                  fmt::utcTime(run.left_open_last_written_utc_ns) + "): the process was killed, crashed, hangs or idles."), "", run.ranks_left_open);
  if (run.files_being_written > 0) {
    std::string live = "Live: " + std::to_string(run.files_being_written) + " of " + std::to_string(run.processes) +
                       " trace files are still being written; the report covers what they held when read";
    if (run.all_files_reach_utc_ns != 0) live += ", every file reaching " + fmt::utcTime(run.all_files_reach_utc_ns);
    out.add(Tier::kLoss, "still_written", "run", live + ". Ops after that may not be in every file yet and are not counted as mismatches.");
  }
  if (!run.missing_ranks.empty()) {
    about(out.add(Tier::kLoss, "missing_ranks", "rank", "Missing: no trace file for rank(s) " + fmt::rankList(run.missing_ranks) + "; the report covers the others."),
          "", run.missing_ranks);
  }
  if (run.damaged_files > 0)
    out.add(Tier::kLoss, "damaged_files", "run", sentence("Damaged: %d of %d trace files had unreadable parts; what could be read is included.",
                           run.damaged_files, run.processes));
  if (run.files > run.processes)
    out.add(Tier::kLoss, "skipped_files", "run", sentence("Skipped: %d %s in the run directory (see problems).", run.files - run.processes,
                           run.files - run.processes == 1 ? "file is not a readable commtrace trace"
                                                          : "files are not readable commtrace traces"));
  if (run.dropped_records == 0 && run.untracked_events == 0) return;
  const std::vector<std::pair<int, uint64_t>> drops = dropsByRank(model);
  std::vector<int> ranks;
  for (const auto& [rank, dropped] : drops) ranks.push_back(rank);
  about(out.add(Tier::kLoss, "dropped_records", "run",
                sentence("Incomplete: %llu records were dropped before reaching the files%s%s and %llu NCCL events were not followed; "
                         "counts and sums are lower bounds, and ops of those ranks other ranks recorded read as mismatches that say so.",
                         static_cast<unsigned long long>(run.dropped_records), dropsWords(drops).c_str(),
                         collectives_lost == 0 ? ""
                                               : sentence(", %llu collective instances missing a member for it",
                                                          static_cast<unsigned long long>(collectives_lost)).c_str(),
                         static_cast<unsigned long long>(run.untracked_events))),
        "", ranks);
}

}  // namespace

void StreamedAnalyses::merge(const StreamedAnalyses& other) {
  arrivals_thread.settle();
  other.arrivals_thread.settle();
  bandwidth.merge(other.bandwidth);
  bandwidth_series.merge(other.bandwidth_series);
  arrivals.merge(other.arrivals);
  shapes.merge(other.shapes);
  transfer_cells.merge(other.transfer_cells);
  gaps.merge(other.gaps);
  transfer_gaps.merge(other.transfer_gaps);
  peer_waits.merge(other.peer_waits);
  anchors.merge(other.anchors);
  lateness.merge(other.lateness);
}

std::unique_ptr<StreamedAnalyses> StreamedAnalyses::snapshot() const {
  auto copy = std::make_unique<StreamedAnalyses>();
  copy->merge(*this);
  copy->arrivals.snapshotFrom(arrivals);  // with the instances still waiting for earlier ops
  copy->finish({});  // no new numbering: each communicator keeps its index
  return copy;
}

Report buildReport(const RunModel& run, const ClockAlignment& clocks, const StepRule& step_rule) {
  StreamedAnalyses streamed;
  streamed.arrivals.knowHosts(run);
  replayRun(run, streamed);
  return buildReport(run, clocks, step_rule, streamed);
}

Report buildReport(const RunModel& run, const ClockAlignment& clocks, const StepRule& step_rule,
                   const StreamedAnalyses& streamed, ProgressLine* progress) {
  Report report;
  const std::vector<uint64_t> instances = streamed.shapes.instancesPerComm(run.comms.size());
  report.run = summarizeRun(run, instances, streamed.transfer_gaps.transfers());
  report.clocks = clocks.summary;
  report.communicators = communicatorRows(run, instances);
  report.bandwidth = streamed.bandwidth.rows(run);
  report.bandwidth_series = bandwidthSeries(run, clocks, streamed.bandwidth_series);
  report.matrix = communicationMatrix(run, streamed.shapes, streamed.transfer_cells);
  // Overlap follows each process through its whole run: from its file, one process per
  // thread at a time, where the loader did not keep the collectives; on the way it measures
  // the compute in the flagged stragglers' gaps.
  GapBusyTime busy(run, streamed.arrivals.evidence(), flaggedStragglers(run, streamed.arrivals));
  report.overlap = run.ops_kept ? computeOverlap(run, step_rule, opsFromModel(run), 1, nullptr, &busy)
                                        : computeOverlap(run, step_rule, opsFromFiles(run), loaderThreads(), progress, &busy);
  report.kernels = kernelBreakdown(run);
  report.peer_waits = peerWaits(run, streamed.peer_waits, report.overlap);
  report.cuda_sync = cudaSyncWaits(run);
  report.stragglers = rankStragglers(run, clocks, {streamed.arrivals, streamed.shapes, streamed.transfer_cells, streamed.lateness, &busy});
  report.mismatches = findMismatches(run, streamed.gaps, streamed.transfer_gaps, report.mismatches_total, &report.collectives_lost_to_drops);

  const JobSteps steps = jobSteps(report.overlap, report.run.ranks);
  report.parallelism = recognizeParallelism(report.communicators, report.bandwidth, steps.steps, report.run.ranks);
  Findings findings;
  addEmptyWindowFinding(report.run, findings);
  addRunFindings(report.run, run, report.collectives_lost_to_drops, findings);
  addMismatchFinding(report, findings);
  addRingNote(report.stragglers, findings);  // a note, said before "No straggler", which ends the list
  addStragglerFindings(report.stragglers, steps, findings);
  addLinkFindings(report.stragglers, findings);
  addSlowdownFinding(report.bandwidth_series, findings);
  addOverlapFinding(report.overlap, findings);
  addPeerWaitFinding(report.peer_waits, findings);
  addCudaSyncFinding(report.cuda_sync, report.overlap, findings);
  addBandwidthFinding(report.bandwidth, findings);
  findings.into(report);
  report.advice = adviceFor(report, steps.steps);
  return report;
}

}  // namespace commtrace::report
