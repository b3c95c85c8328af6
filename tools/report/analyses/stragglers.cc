#include "tools/report/analyses/stragglers.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "tools/report/analyses/lateness.h"
#include "tools/report/analyses/lateness_heatmap.h"
#include "tools/report/analyses/rank_index.h"
#include "tools/report/analyses/slow_links.h"
#include "tools/report/load/stats.h"
#include "tools/report/analyses/straggler_class.h"

namespace commtrace::report {
namespace {

using RankTally = ArrivalTally::Seat;  // a rank's sums are its seats' sums

struct Tallies {
  std::vector<RankTally> ranks;  // per global rank
  const std::vector<ArrivalTally::Comm>* comms = nullptr;
};

Tallies tally(const RunModel& run, const ArrivalTally& arrivals) {
  Tallies t;
  t.ranks.resize(rankSlots(run));
  t.comms = &arrivals.comms();
  for (size_t c = 0; c < arrivals.comms().size(); ++c) {
    const std::vector<RankTally>& seats = arrivals.comms()[c].seats;
    for (size_t seat = 0; seat < seats.size(); ++seat) {
      const int rank = globalRankOf(run.comms[c], static_cast<int>(seat));
      if (rank >= 0) t.ranks[static_cast<size_t>(rank)].merge(seats[seat]);
    }
  }
  for (const auto& [process, e] : RoleGaps::excessByProcess(arrivals.roleSums())) {
    const int rank = process >= 0 && static_cast<size_t>(process) < run.processes.size() ? run.processes[static_cast<size_t>(process)].rank : -1;
    if (rank < 0 || static_cast<size_t>(rank) >= t.ranks.size()) continue;
    t.ranks[static_cast<size_t>(rank)].excess.merge(e);
  }
  return t;
}

double strength(double z, double wait_ratio) { return std::min(z / kMinZ, wait_ratio / kMinWaitRatio); }

// The waiting caused over the median's; with a median of none, any waiting is infinitely more.
double waitRatio(double wait_ns, double median_wait_ns) {
  return median_wait_ns > 0 ? wait_ns / median_wait_ns : (wait_ns > 0 ? INFINITY : 0.0);
}

// A rank the whole run does not flag is flagged over its worst stretch of one of its
// communicators' instances (arrival_windows.h), when the stretch passes both thresholds,
// its z held to kMinStretchZ.
void flagStretches(const RunModel& run, const Tallies& t, std::vector<StragglerRow>& rows) {
  std::map<int, StragglerRow*> by_rank;
  for (StragglerRow& row : rows)
    if (!row.flagged && row.wait_caused_us > 0) by_rank[row.rank] = &row;
  for (size_t c = 0; c < t.comms->size() && !by_rank.empty(); ++c) {
    std::vector<size_t> seats;
    std::vector<StragglerRow*> seat_rows;
    for (size_t seat = 0; seat < (*t.comms)[c].seats.size(); ++seat) {
      const auto it = by_rank.find(globalRankOf(run.comms[c], static_cast<int>(seat)));
      if (it != by_rank.end()) seats.push_back(seat), seat_rows.push_back(it->second);
    }
    const std::vector<ArrivalWindows::Stretch> stretches = (*t.comms)[c].windows.best(seats);
    for (size_t i = 0; i < seats.size(); ++i) {
      const ArrivalWindows::Stretch& s = stretches[i];
      StragglerRow& row = *seat_rows[i];
      row.stretch_z = std::max(row.stretch_z, s.z);
      const double ratio = waitRatio(s.wait_caused_ns, s.median_wait_caused_ns);
      if (s.z < kMinStretchZ || ratio < kMinWaitRatio || s.wait_caused_ns <= 0) continue;
      row.flagged = true;
      row.confidence = std::max(row.confidence, confidenceOf(strength(s.z * kMinZ / kMinStretchZ, ratio)));
    }
  }
}

// Per host, the typical waiting caused by a rank of the other hosts (of the other ranks when
// there is one host): their median, so that a slow host's ranks do not lift their own
// yardstick, and at least kTypicalFloor of the mean over every rank, for when one culprit
// takes nearly all of it and the others' median is next to nothing.
std::map<std::string, double> typicalWaitCaused(const Tallies& t, const std::vector<std::string>& hosts) {
  std::map<std::string, std::vector<double>> by_host;  // each host's ranks' waits, sorted below
  std::vector<double> all;
  double total = 0;
  for (size_t rank = 0; rank < t.ranks.size(); ++rank) {
    if (t.ranks[rank].instances == 0) continue;
    by_host[hosts[rank]].push_back(t.ranks[rank].wait_caused_ns);
    all.push_back(t.ranks[rank].wait_caused_ns);
    total += t.ranks[rank].wait_caused_ns;
  }
  std::sort(all.begin(), all.end());
  const double floor = all.empty() ? 0 : kTypicalFloor * total / static_cast<double>(all.size());
  std::map<std::string, double> out;
  for (auto& [host, own] : by_host) {
    std::sort(own.begin(), own.end());
    out[host] = std::max(by_host.size() == 1 ? median(all) : medianExcluding(all, own), floor);
  }
  return out;
}

// Flagged: its own delays are systematic (its GPU gaps exceed its peers' by z) and caused far more waiting than the
// typical rank elsewhere, or caused so much more (a stall now and then) that the count needs
// only to show it created some, and more than its own host's other ranks too (`host_ratio`:
// over their median; infinite alone on its host). Without the last, every rank of a healthy
// pipeline's first stage passed the strong ratio (each of its delays the stages after it
// inherit, against a typical rank of those stages), and one with a gap excess of z 3.3 on
// jitter was named.
bool rankIsCulprit(const RankTally& r, double z, double ratio, double host_ratio) {
  if (r.wait_caused_ns <= 0) return false;
  return (z >= kMinZ && ratio >= kMinWaitRatio) ||
         (ratio >= kStrongWaitRatio && host_ratio >= kMinWaitRatio && r.last >= kMinCreated && z >= kMinZ / 2);
}

// Per rank, the median waiting caused by the other ranks of its host; -1 for a rank alone there.
std::vector<double> hostPeersWaitCaused(const Tallies& t, const std::vector<std::string>& hosts) {
  std::map<std::string, std::vector<size_t>> by_host;
  for (size_t rank = 0; rank < t.ranks.size(); ++rank)
    if (t.ranks[rank].instances != 0) by_host[hosts[rank]].push_back(rank);
  std::vector<double> out(t.ranks.size(), -1);
  for (const auto& [host, ranks] : by_host) {
    if (ranks.size() < 2) continue;
    std::vector<double> waits;
    for (size_t rank : ranks) waits.push_back(t.ranks[rank].wait_caused_ns);
    std::sort(waits.begin(), waits.end());
    for (size_t rank : ranks) out[rank] = medianExcluding(waits, {t.ranks[rank].wait_caused_ns});
  }
  return out;
}

std::vector<StragglerRow> rankRows(const RunModel& run, const Tallies& t, const std::vector<std::string>& hosts) {
  const std::map<std::string, double> typical = typicalWaitCaused(t, hosts);
  const std::vector<double> host_peers = hostPeersWaitCaused(t, hosts);
  std::vector<StragglerRow> rows;
  for (size_t rank = 0; rank < t.ranks.size(); ++rank) {
    const RankTally& r = t.ranks[rank];
    if (r.instances == 0) continue;
    const double median_wait = typical.at(hosts[rank]);
    StragglerRow row;
    row.rank = static_cast<int>(rank);
    row.host = hosts[rank];
    row.instances = r.instances;
    row.wait_caused_us = r.wait_caused_ns / 1e3;
    row.late_fraction = r.last / static_cast<double>(r.instances);
    row.mean_lateness_us = r.lateness_ns / static_cast<double>(r.instances) / 1e3;
    const double z = gapExcessZ(r);
    const double ratio = waitRatio(r.wait_caused_ns, median_wait);
    const double host_ratio = host_peers[rank] < 0 ? INFINITY : waitRatio(r.wait_caused_ns, host_peers[rank]);
    row.flagged = rankIsCulprit(r, z, ratio, host_ratio);
    row.confidence = confidenceOf(strength(z, ratio));
    row.cls = "none";
    row.chance_fraction = r.expected_last / static_cast<double>(r.instances);
    row.z = z;
    row.median_wait_caused_us = median_wait / 1e3;
    rows.push_back(std::move(row));
  }
  flagStretches(run, t, rows);
  double worst = 0;
  for (const StragglerRow& row : rows)
    if (row.flagged) worst = std::max(worst, row.wait_caused_us);
  for (StragglerRow& row : rows) row.flagged = row.flagged && row.wait_caused_us >= kMinShareOfWorst * worst;
  std::sort(rows.begin(), rows.end(), [](const StragglerRow& a, const StragglerRow& b) {
    return a.wait_caused_us != b.wait_caused_us ? a.wait_caused_us > b.wait_caused_us : a.rank < b.rank;
  });
  return rows;
}

std::vector<int> flaggedOf(const std::vector<StragglerRow>& rows) {
  std::vector<int> flagged;
  for (const StragglerRow& row : rows)
    if (row.flagged) flagged.push_back(row.rank);
  return flagged;
}

// busy: asked for these rows' flagged ranks; nullptr: measured here from the run's timelines.
void classify(const RunModel& run, const StragglerEvidence& evidence, const GapBusyTime* busy,
              const std::vector<SlowLinkRow>& links, std::vector<StragglerRow>& rows) {
  const std::vector<int> flagged = flaggedOf(rows);
  std::optional<GapBusyTime> from_timelines;
  if (busy == nullptr) {
    from_timelines.emplace(run, evidence, flagged);
    from_timelines->answerFromTimelines(run);
    busy = &*from_timelines;
  }
  const std::map<int, StragglerClass> classes = classifyStragglers(run, evidence, flagged, links, *busy);
  for (StragglerRow& row : rows) {
    const auto it = classes.find(row.rank);
    if (it == classes.end()) continue;
    row.cls = it->second.cls;
    row.confidence *= 0.5 + 0.5 * it->second.certainty;
    row.basis = it->second.basis;
    const GapFigures& f = it->second.figures;
    row.gap_ops = f.ops;
    row.gap_sampled = f.sampled;
    row.gap_us_p50 = f.gap_us;
    row.peer_gap_us_p50 = f.peer_gap_us;
    row.gap_excess_us_p50 = f.excess_us;
    row.late_lateness_us_p50 = f.lateness_us;
    row.compute_share = f.compute_share;
    row.enqueue_fraction = f.enqueue_fraction;
    row.delay_fraction = f.delay_fraction;
  }
}

// Whether a host's delays are its own rather than one of its ranks': most of its ranks
// created more waiting than the typical rank of the other hosts, and no one rank caused most
// of the host's (one slow GPU spreads its lateness through its host's tensor-parallel group,
// but the waiting passes back to it; a whole node slower is one host).
bool spreadOverTheHost(const Tallies& t, const HostStragglerRow& row, double host_wait, double typical_rank_wait) {
  size_t above = 0;
  double top = 0;
  for (int rank : row.ranks) {
    const RankTally& r = t.ranks[static_cast<size_t>(rank)];
    above += r.wait_caused_ns > kMinHostRankRatio * typical_rank_wait ? 1 : 0;
    top = std::max(top, r.wait_caused_ns);
  }
  return 2 * above > row.ranks.size() && top <= kMaxRankShareOfHost * host_wait;
}

std::vector<HostStragglerRow> hostRows(const Tallies& t, const std::vector<std::string>& hosts) {
  std::map<std::string, std::pair<HostStragglerRow, RankTally>> by_host;
  for (size_t rank = 0; rank < t.ranks.size(); ++rank) {
    const RankTally& r = t.ranks[rank];
    if (r.instances == 0 || hosts[rank].empty()) continue;
    auto& [row, sum] = by_host[hosts[rank]];
    row.host = hosts[rank];
    row.ranks.push_back(static_cast<int>(rank));
    sum.merge(r);
  }
  const std::map<std::string, double> typical = typicalWaitCaused(t, hosts);
  std::vector<HostStragglerRow> rows;
  for (auto& [host, entry] : by_host) {
    auto& [row, sum] = entry;
    row.wait_caused_us = sum.wait_caused_ns / 1e3;
    row.late_fraction = sum.last / static_cast<double>(sum.instances);
    row.z = gapExcessZ(sum);  // reported; a host is judged by how its ranks' waiting caused spreads
    // Per rank, the host's waiting caused against the typical rank's of the other hosts.
    const double typical_rank_wait = typical.at(host);
    const double ratio = waitRatio(sum.wait_caused_ns / static_cast<double>(row.ranks.size()), typical_rank_wait);
    row.flagged = row.ranks.size() >= 2 && by_host.size() >= 2 && ratio >= kMinWaitRatio && row.z >= kMinZ && sum.wait_caused_ns > 0 &&
                  spreadOverTheHost(t, row, sum.wait_caused_ns, typical_rank_wait);
    // The confidence follows the verdict (a host shown sure and unflagged beside its flagged
    // only rank read as a contradiction): a host of one rank, or the only host, is never the
    // culprit (its rank is), and an unflagged one stays under the flag's 0.5.
    double strength = row.ranks.size() >= 2 && by_host.size() >= 2 ? std::min(ratio / kMinWaitRatio, row.z / kMinZ) : 0.0;
    if (!row.flagged) strength = std::min(strength, kUnflaggedStrength);
    row.confidence = confidenceOf(strength);
    rows.push_back(std::move(row));
  }
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.wait_caused_us > b.wait_caused_us; });
  return rows;
}

std::vector<CommStragglerRow> commRows(const RunModel& run, const Tallies& t) {
  std::vector<CommStragglerRow> rows;
  for (size_t index = 0; index < t.comms->size(); ++index) {
    const ArrivalTally::Comm& tally = (*t.comms)[index];
    if (tally.instances == 0) continue;
    const Communicator& comm = run.comms[index];
    const auto worst = std::max_element(tally.seats.begin(), tally.seats.end(),
                                        [](const RankTally& a, const RankTally& b) { return a.wait_caused_ns < b.wait_caused_ns; });
    const int worst_comm_rank = static_cast<int>(worst - tally.seats.begin());
    CommStragglerRow row;
    row.comm = comm.id;
    row.comm_name = std::string(run.name(comm.name));
    row.worst_rank = globalRankOf(comm, worst_comm_rank);
    row.wait_caused_us = worst->wait_caused_ns / 1e3;
    row.total_wait_us = tally.total_wait_ns / 1e3;
    row.instances = tally.instances;
    rows.push_back(std::move(row));
  }
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.wait_caused_us > b.wait_caused_us; });
  return rows;
}

// The replays' estimates onto the rows whose ranks they replayed.
void addImpacts(const RunModel& run, const std::vector<ImpactEstimate>& impacts, StragglerReport& report) {
  const auto ranksOf = [&](const ImpactEstimate& e) {
    std::vector<int> ranks;
    for (int32_t p : e.processes)
      if (p >= 0 && static_cast<size_t>(p) < run.processes.size()) ranks.push_back(run.processes[static_cast<size_t>(p)].rank);
    std::sort(ranks.begin(), ranks.end());
    return ranks;
  };
  for (const ImpactEstimate& e : impacts) {
    const std::vector<int> ranks = ranksOf(e);
    for (StragglerRow& row : report.ranks)
      if (ranks == std::vector<int>{row.rank}) row.step_saved_share = e.saved_share;
    for (HostStragglerRow& row : report.hosts) {
      std::vector<int> host_ranks = row.ranks;
      std::sort(host_ranks.begin(), host_ranks.end());
      if (ranks == host_ranks) row.step_saved_share = e.saved_share;
    }
  }
}

}  // namespace

void ArrivalTally::Seat::merge(const Seat& other) {
  excess.merge(other.excess);
  instances += other.instances;
  last += other.last;
  expected_last += other.expected_last;
  var_last += other.var_last;
  wait_caused_ns += other.wait_caused_ns;
  lateness_ns += other.lateness_ns;
}

void ArrivalTally::Comm::merge(const Comm& other) {
  instances += other.instances;
  total_wait_ns += other.total_wait_ns;
  if (seats.size() < other.seats.size()) seats.resize(other.seats.size());
  for (size_t s = 0; s < other.seats.size(); ++s) seats[s].merge(other.seats[s]);
  windows.merge(other.windows);
}

ArrivalTally::ArrivalTally() : attribution_([this](const Attributed& a) { tally(a); }) {}

void ArrivalTally::collective(const CollInstance& c, std::span<const MemberView> members) { attribution_.addCollective(c, members); }

void ArrivalTally::transfer(const P2pTransfer& t) { attribution_.addTransfer(t); }

ArrivalTally::Comm& ArrivalTally::commAt(uint32_t comm) {
  if (comms_.size() <= comm) comms_.resize(comm + 1);
  return comms_[comm];
}

void ArrivalTally::noteWaited(const SyncMember& m, NameId path) {
  if (m.wait_ns <= 0) return;
  const uint64_t wait_ns = static_cast<uint64_t>(m.wait_ns);
  double& waited = waiting_by_path_[path].waited_ns;
  // Ops under no range are summed as they come: a run without NVTX paths (most wide ones)
  // keeps no span per process, and its members cost one lookup.
  if (m.process < 0 || path == 0) {
    waited += static_cast<double>(wait_ns);
    return;
  }
  const uint64_t key = (uint64_t{static_cast<uint32_t>(m.process)} << 32) | path;
  waited += static_cast<double>(wait_spans_[key].takeLength(m.gpu_start_ns, m.gpu_start_ns + wait_ns));
}

void ArrivalTally::tally(const Attributed& a) {
  evidence_.add(a);
  for (const Attributed::Charge& charge : a.charges) commAt(charge.origin.comm);
  Comm& comm = commAt(a.comm);
  ++comm.instances;
  comm.total_wait_ns += static_cast<double>(a.total_wait_ns);
  const double chance = 1.0 / static_cast<double>(a.members.size());
  for (size_t i = 0; i < a.members.size(); ++i) {
    const SyncMember& m = a.members[i];
    if (comm.seats.size() <= static_cast<size_t>(m.comm_rank)) comm.seats.resize(static_cast<size_t>(m.comm_rank) + 1);
    Seat& seat = comm.seats[static_cast<size_t>(m.comm_rank)];
    ++seat.instances;
    seat.last += a.created[i];
    seat.expected_last += chance;
    seat.var_last += chance * (1 - chance);
    seat.lateness_ns += m.arrival_ns;
    noteWaited(m, a.pathOf(i));
    // A send's or receive's peers are its role's: their gaps are summed whole (roleSums).
    if (!a.transfer && m.gap_ns != MemberView::kNoGap && m.peer_gap_ns >= 0)
      seat.excess.add((static_cast<double>(m.gap_ns) - m.peer_gap_ns) / 1e3);
    comm.windows.add(static_cast<size_t>(m.comm_rank), {.last = a.created[i], .expected_last = chance, .var_last = chance * (1 - chance)});
  }
  for (const Attributed::Charge& charge : a.charges) {
    Comm& to = comms_[charge.origin.comm];
    const size_t seat = static_cast<size_t>(charge.origin.comm_rank);
    if (to.seats.size() <= seat) to.seats.resize(seat + 1);
    to.seats[seat].wait_caused_ns += charge.wait_ns;
    to.windows.add(seat, {.wait_caused_ns = charge.wait_ns});
    waiting_by_path_[charge.path].wait_caused_ns += charge.wait_ns;
    if (charge.origin.process < 0) continue;
    if (process_cost_.size() <= static_cast<size_t>(charge.origin.process)) process_cost_.resize(static_cast<size_t>(charge.origin.process) + 1, 0);
    process_cost_[static_cast<size_t>(charge.origin.process)] += charge.wait_ns;
  }
  comm.windows.next();
  if (++syncs_ == next_pick_) {
    pickCandidates();
    next_pick_ = syncs_ < kPickEvery ? 2 * syncs_ : syncs_ + std::max(kPickEvery, syncs_ / kPickShare);
  }
}

// The costliest origins so far, well above the median process's cost, are replayed from now
// on: a culprit shows within the first steps, and what its fix saves is a rate.
void ArrivalTally::pickCandidates() {
  std::vector<std::pair<double, int32_t>> costs;
  for (size_t p = 0; p < process_cost_.size(); ++p) costs.emplace_back(process_cost_[p], static_cast<int32_t>(p));
  if (costs.size() < 2) return;
  std::vector<double> values;
  for (const auto& c : costs) values.push_back(c.first);
  const double typical = median(std::move(values));
  std::sort(costs.rbegin(), costs.rend());
  for (size_t i = 0; i < costs.size() && i < kCandidatesPicked; ++i)
    if (costs[i].first > 0 && costs[i].first >= kCandidateRatio * typical) attribution_.addCandidate({costs[i].second});
  pickHostCandidate(typical);
}

// The costliest host whose ranks' cost is spread (each of at least two at kCandidateRatio the
// median process's): what fixing a slow host would save is its ranks' delays removed together.
void ArrivalTally::pickHostCandidate(double typical) {
  if (run_ == nullptr) return;
  std::map<std::string_view, std::pair<double, std::vector<int32_t>>> hosts;  // host -> (cost, its costly processes)
  for (size_t p = 0; p < process_cost_.size() && p < run_->processes.size(); ++p) {
    if (process_cost_[p] <= 0 || process_cost_[p] < kCandidateRatio * typical) continue;
    auto& [cost, processes] = hosts[run_->processes[p].host];
    cost += process_cost_[p];
    processes.push_back(static_cast<int32_t>(p));
  }
  const auto costliest = std::max_element(hosts.begin(), hosts.end(), [](const auto& a, const auto& b) { return a.second.first < b.second.first; });
  if (costliest == hosts.end() || costliest->second.second.size() < 2) return;
  std::vector<int32_t> all;  // every process of the host, costly or not: its ranks together
  for (size_t p = 0; p < run_->processes.size(); ++p)
    if (run_->processes[p].host == costliest->first) all.push_back(static_cast<int32_t>(p));
  attribution_.addCandidate(std::move(all));
}

void ArrivalTally::snapshotFrom(const ArrivalTally& live) {
  run_ = live.run_;
  attribution_.copyStateFrom(live.attribution_);
  comms_ = live.comms_;
  evidence_ = live.evidence_;
  process_cost_ = live.process_cost_;
  waiting_by_path_ = live.waiting_by_path_;
  wait_spans_ = live.wait_spans_;
  syncs_ = live.syncs_;
  next_pick_ = live.next_pick_;
  merged_impacts_ = live.merged_impacts_;
  merged_role_sums_ = live.merged_role_sums_;
}

RoleGaps::ProcessSums ArrivalTally::roleSums() const {
  RoleGaps::ProcessSums out = attribution_.roleGaps().sums();
  RoleGaps::merge(out, merged_role_sums_);
  return out;
}

std::vector<ImpactEstimate> ArrivalTally::impacts() const {
  std::vector<ImpactEstimate> out = attribution_.impacts();
  out.insert(out.end(), merged_impacts_.begin(), merged_impacts_.end());
  return out;
}

void ArrivalTally::finish() {
  attribution_.flush();
  attribution_.releaseWalk();
}

void ArrivalTally::merge(const ArrivalTally& other) {
  if (comms_.size() < other.comms_.size()) comms_.resize(other.comms_.size());
  for (size_t c = 0; c < other.comms_.size(); ++c) comms_[c].merge(other.comms_[c]);
  evidence_.merge(other.evidence_);
  for (const auto& [path, w] : other.waiting_by_path_) {
    PathWaiting& mine = waiting_by_path_[path];
    mine.waited_ns += w.waited_ns;
    mine.wait_caused_ns += w.wait_caused_ns;
  }
  const std::vector<ImpactEstimate> theirs = other.impacts();
  merged_impacts_.insert(merged_impacts_.end(), theirs.begin(), theirs.end());
  RoleGaps::merge(merged_role_sums_, other.roleSums());
}

StragglerReport rankStragglers(const RunModel& run, const ClockAlignment& clocks) {
  ArrivalTally arrivals;
  LatenessBins lateness;
  OpFanout all({&arrivals, &lateness});
  replayRun(run, all);
  return rankStragglers(run, clocks, {arrivals, collShapes(run), transferCells(run), lateness});
}

bool onFlaggedHost(const StragglerReport& report, int rank) {
  return std::any_of(report.hosts.begin(), report.hosts.end(), [&](const HostStragglerRow& h) {
    return h.flagged && std::find(h.ranks.begin(), h.ranks.end(), rank) != h.ranks.end();
  });
}

double gapExcessZ(const ArrivalTally::Seat& s) {
  const RoleGaps::Sums& e = s.excess;
  if (e.n < 2) return 0;
  const double mean = e.sum_us / e.n;
  if (mean < kMinGapSpreadUs) return 0;  // a few timer ticks, however often: no delay
  const double variance = std::max(0.0, e.sq_us / e.n - mean * mean);
  return mean / (std::max(std::sqrt(variance), kMinGapSpreadUs) / std::sqrt(e.n));
}

double lastArrivalZ(double last, double expected_last, double var_last) {
  return var_last > 0 ? (last - expected_last) / std::sqrt(var_last) : 0.0;
}

double confidenceOf(double s) { return s < 1 ? std::max(0.0, 0.5 * s) : std::min(1.0, 0.5 + 0.25 * (s - 1)); }

std::vector<int> flaggedStragglers(const RunModel& run, const ArrivalTally& arrivals) {
  return flaggedOf(rankRows(run, tally(run, arrivals), hostsByRank(run)));
}

StragglerReport rankStragglers(const RunModel& run, const ClockAlignment& clocks, const StragglerInputs& in) {
  const std::vector<std::string> hosts = hostsByRank(run);
  const Tallies t = tally(run, in.arrivals);
  StragglerReport report;
  report.links = slowLinks(run, in.shapes, in.transfers);
  report.ranks = rankRows(run, t, hosts);
  report.hosts = hostRows(t, hosts);
  addImpacts(run, in.arrivals.impacts(), report);
  classify(run, in.arrivals.evidence(), in.busy, report.links, report.ranks);
  report.comms = commRows(run, t);
  report.heatmap = latenessHeatmap(run, clocks, in.lateness);
  return report;
}

}  // namespace commtrace::report
