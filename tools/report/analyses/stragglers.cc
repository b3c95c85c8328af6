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
    const ArrivalWindows& windows = (*t.comms)[c].windows;
    for (size_t seat = 0; seat < (*t.comms)[c].seats.size(); ++seat) {
      const auto it = by_rank.find(globalRankOf(run.comms[c], static_cast<int>(seat)));
      if (it == by_rank.end()) continue;
      const ArrivalWindows::Stretch s = windows.best(seat);
      StragglerRow& row = *it->second;
      row.stretch_z = std::max(row.stretch_z, s.z);
      const double ratio = waitRatio(s.wait_caused_ns, s.median_wait_caused_ns);
      if (s.z < kMinStretchZ || ratio < kMinWaitRatio || s.wait_caused_ns <= 0) continue;
      row.flagged = true;
      row.confidence = std::max(row.confidence, confidenceOf(strength(s.z * kMinZ / kMinStretchZ, ratio)));
    }
  }
}

std::vector<StragglerRow> rankRows(const RunModel& run, const Tallies& t, const std::vector<std::string>& hosts) {
  std::vector<double> waits;
  for (const RankTally& r : t.ranks)
    if (r.instances != 0) waits.push_back(r.wait_caused_ns);
  const double median_wait = median(waits);
  std::vector<StragglerRow> rows;
  for (size_t rank = 0; rank < t.ranks.size(); ++rank) {
    const RankTally& r = t.ranks[rank];
    if (r.instances == 0) continue;
    StragglerRow row;
    row.rank = static_cast<int>(rank);
    row.host = hosts[rank];
    row.instances = r.instances;
    row.wait_caused_us = r.wait_caused_ns / 1e3;
    row.late_fraction = r.last / static_cast<double>(r.instances);
    row.mean_lateness_us = r.lateness_ns / static_cast<double>(r.instances) / 1e3;
    const double z = lastArrivalZ(r.last, r.expected_last, r.var_last);
    const double ratio = waitRatio(r.wait_caused_ns, median_wait);
    row.flagged = z >= kMinZ && ratio >= kMinWaitRatio && r.wait_caused_ns > 0;
    row.confidence = confidenceOf(strength(z, ratio));
    row.cls = "none";
    row.chance_fraction = r.expected_last / static_cast<double>(r.instances);
    row.z = z;
    row.median_wait_caused_us = median_wait / 1e3;
    rows.push_back(std::move(row));
  }
  flagStretches(run, t, rows);
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
  }
}

// Whether a host's lateness is its own rather than one of its ranks': most of its ranks were
// last more often than chance, and no one rank holds most of its last arrivals (two slow
// ranks of eight are two stragglers, a whole node slower is one host).
bool spreadOverTheHost(const Tallies& t, const HostStragglerRow& row, double host_last) {
  size_t above_chance = 0;
  double top = 0;
  for (int rank : row.ranks) {
    const RankTally& r = t.ranks[static_cast<size_t>(rank)];
    above_chance += r.last > r.expected_last ? 1 : 0;
    top = std::max(top, r.last);
  }
  return 2 * above_chance >= row.ranks.size() && top <= kMaxRankShareOfHost * host_last;
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
  std::vector<double> waits;
  for (const auto& [host, entry] : by_host) waits.push_back(entry.second.wait_caused_ns);
  const double median_wait = median(waits);
  std::vector<HostStragglerRow> rows;
  for (auto& [host, entry] : by_host) {
    auto& [row, sum] = entry;
    row.wait_caused_us = sum.wait_caused_ns / 1e3;
    row.late_fraction = sum.last / static_cast<double>(sum.instances);
    // The ranks' chance variances summed overstate the host's (its ranks are never last
    // together): the host's z is an underestimate, never an overstatement.
    row.z = lastArrivalZ(sum.last, sum.expected_last, sum.var_last);
    const double ratio = waitRatio(sum.wait_caused_ns, median_wait);
    row.confidence = confidenceOf(strength(row.z, ratio));
    row.flagged = row.ranks.size() >= 2 && by_host.size() >= 2 && row.z >= kMinZ && ratio >= kMinWaitRatio &&
                  sum.wait_caused_ns > 0 && spreadOverTheHost(t, row, sum.last);
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

}  // namespace

void ArrivalTally::Seat::merge(const Seat& other) {
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

void ArrivalTally::collective(const CollInstance& c, std::span<const MemberView> members) {
  const nccl::FuncInfo* func = NamePool::ncclFunc(c.func);
  if (!arrivalsOf(func != nullptr && func->synchronizing, members, arrivals_)) return;
  if (comms_.size() <= c.comm) comms_.resize(c.comm + 1);
  Comm& comm = comms_[c.comm];
  if (comm.seats.size() < members.size()) comm.seats.resize(members.size());
  ++comm.instances;
  comm.total_wait_ns += static_cast<double>(arrivals_.total_wait_ns);
  const double chance = 1.0 / static_cast<double>(arrivals_.members.size());
  for (const MemberArrival& m : arrivals_.members) {
    Seat& seat = comm.seats[static_cast<size_t>(m.comm_rank)];
    ++seat.instances;
    seat.last += m.last_share;
    seat.expected_last += chance;
    seat.var_last += chance * (1 - chance);
    seat.wait_caused_ns += m.last_share * static_cast<double>(arrivals_.total_wait_ns);
    seat.lateness_ns += static_cast<double>(m.lateness_ns);
    comm.windows.add(static_cast<size_t>(m.comm_rank), {.last = m.last_share,
                                                        .expected_last = chance,
                                                        .var_last = chance * (1 - chance),
                                                        .wait_caused_ns = m.last_share * static_cast<double>(arrivals_.total_wait_ns)});
  }
  comm.windows.next();
}

void ArrivalTally::finish(std::span<const uint32_t> new_index) {
  std::vector<Comm> renumbered_comms(comms_.size());
  for (size_t c = 0; c < comms_.size(); ++c) {
    const uint32_t to = renumbered(new_index, static_cast<uint32_t>(c));
    if (renumbered_comms.size() <= to) renumbered_comms.resize(to + 1);
    renumbered_comms[to] = std::move(comms_[c]);
  }
  comms_ = std::move(renumbered_comms);
}

void ArrivalTally::merge(const ArrivalTally& other) {
  if (comms_.size() < other.comms_.size()) comms_.resize(other.comms_.size());
  for (size_t c = 0; c < other.comms_.size(); ++c) comms_[c].merge(other.comms_[c]);
}

StragglerReport rankStragglers(const RunModel& run, const ClockAlignment& clocks) {
  ArrivalTally arrivals;
  LatenessBins lateness;
  StragglerEvidence evidence;
  OpFanout all({&arrivals, &lateness, &evidence});
  replayRun(run, all);
  return rankStragglers(run, clocks, {arrivals, collShapes(run), transferCells(run), lateness, evidence});
}

bool onFlaggedHost(const StragglerReport& report, int rank) {
  return std::any_of(report.hosts.begin(), report.hosts.end(), [&](const HostStragglerRow& h) {
    return h.flagged && std::find(h.ranks.begin(), h.ranks.end(), rank) != h.ranks.end();
  });
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
  classify(run, in.evidence, in.busy, report.links, report.ranks);
  report.hosts = hostRows(t, hosts);
  report.comms = commRows(run, t);
  report.heatmap = latenessHeatmap(run, clocks, in.lateness);
  return report;
}

}  // namespace commtrace::report
