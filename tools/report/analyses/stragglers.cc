#include "tools/report/analyses/stragglers.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "tools/report/format.h"
#include "tools/report/analyses/lateness.h"
#include "tools/report/analyses/lateness_heatmap.h"
#include "tools/report/analyses/rank_index.h"
#include "tools/report/analyses/slow_links.h"
#include "tools/report/analyses/stats.h"
#include "tools/report/analyses/straggler_class.h"

namespace commtrace::report {
namespace {

struct RankTally {
  uint64_t instances = 0;
  double last = 0;           // instances it arrived last at (shared among ties)
  double expected_last = 0;  // ... if the last arriver were drawn at random
  double var_last = 0;
  double wait_caused_ns = 0;
  double lateness_ns = 0;
};

struct CommTally {
  uint64_t instances = 0;
  double total_wait_ns = 0;
  std::vector<double> wait_caused_ns;  // per comm rank
};

struct Tallies {
  std::vector<RankTally> ranks;  // per global rank
  std::map<uint32_t, CommTally> comms;
};

Tallies tally(const RunModel& run) {
  Tallies t;
  t.ranks.resize(rankSlots(run));
  InstanceArrivals a;
  for (const CollInstance& c : run.collectives) {
    if (!arrivalsOf(run, c, a)) continue;
    CommTally& comm = t.comms[c.comm];
    if (comm.wait_caused_ns.empty()) comm.wait_caused_ns.assign(c.n_members, 0.0);
    ++comm.instances;
    comm.total_wait_ns += static_cast<double>(a.total_wait_ns);
    const double chance = 1.0 / static_cast<double>(a.members.size());
    for (const MemberArrival& m : a.members) {
      const double caused = m.last_share * static_cast<double>(a.total_wait_ns);
      comm.wait_caused_ns[m.comm_rank] += caused;
      if (m.rank < 0) continue;
      RankTally& r = t.ranks[m.rank];
      ++r.instances;
      r.last += m.last_share;
      r.expected_last += chance;
      r.var_last += chance * (1 - chance);
      r.wait_caused_ns += caused;
      r.lateness_ns += static_cast<double>(m.lateness_ns);
    }
  }
  return t;
}

// How far above chance, in standard deviations, a rank's count of last arrivals is.
double zScore(const RankTally& r) { return r.var_last > 0 ? (r.last - r.expected_last) / std::sqrt(r.var_last) : 0.0; }

double strength(double z, double wait_ratio) { return std::min(z / kMinZ, wait_ratio / kMinWaitRatio); }

double confidenceOf(double s) { return s < 1 ? std::max(0.0, 0.5 * s) : std::min(1.0, 0.5 + 0.25 * (s - 1)); }

std::string rankEvidence(const RankTally& r, double z, double median_wait_ns) {
  // Ranks tied for last share that instance, so the count is a sum of shares: say it as a share.
  const double n = static_cast<double>(r.instances);
  std::string e = "last in " + fmt::percent(r.last / n) + " of " + std::to_string(r.instances) +
                  " instances (a tie for last shared) where chance gives " + fmt::percent(r.expected_last / n) + " (z = " +
                  fmt::fixed(z, 1) + " standard deviations); caused " + fmt::duration(r.wait_caused_ns / 1e3) + " of waiting";
  if (median_wait_ns > 0) return e + ", " + fmt::fixed(r.wait_caused_ns / median_wait_ns, 1) + "x the median rank's " + fmt::duration(median_wait_ns / 1e3);
  return e + "; the median rank caused none";
}

std::vector<StragglerRow> rankRows(const Tallies& t, const std::vector<std::string>& hosts) {
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
    const double z = zScore(r);
    const double ratio = median_wait > 0 ? r.wait_caused_ns / median_wait : (r.wait_caused_ns > 0 ? INFINITY : 0.0);
    row.flagged = z >= kMinZ && ratio >= kMinWaitRatio && r.wait_caused_ns > 0;
    row.confidence = confidenceOf(strength(z, ratio));
    row.cls = "none";
    row.evidence = rankEvidence(r, z, median_wait);
    rows.push_back(std::move(row));
  }
  std::sort(rows.begin(), rows.end(), [](const StragglerRow& a, const StragglerRow& b) {
    return a.wait_caused_us != b.wait_caused_us ? a.wait_caused_us > b.wait_caused_us : a.rank < b.rank;
  });
  return rows;
}

void classify(const RunModel& run, const std::vector<SlowLinkRow>& links, std::vector<StragglerRow>& rows) {
  std::vector<int> flagged;
  for (const StragglerRow& row : rows)
    if (row.flagged) flagged.push_back(row.rank);
  const std::map<int, StragglerClass> classes = classifyStragglers(run, flagged, links);
  for (StragglerRow& row : rows) {
    const auto it = classes.find(row.rank);
    if (it == classes.end()) continue;
    row.cls = it->second.cls;
    row.confidence *= 0.5 + 0.5 * it->second.certainty;
    row.evidence += "; " + it->second.evidence;
  }
}

std::vector<HostStragglerRow> hostRows(const Tallies& t, const std::vector<std::string>& hosts) {
  std::map<std::string, std::pair<HostStragglerRow, RankTally>> by_host;
  for (size_t rank = 0; rank < t.ranks.size(); ++rank) {
    const RankTally& r = t.ranks[rank];
    if (r.instances == 0 || hosts[rank].empty()) continue;
    auto& [row, sum] = by_host[hosts[rank]];
    row.host = hosts[rank];
    row.ranks.push_back(static_cast<int>(rank));
    sum.instances += r.instances;
    sum.last += r.last;
    sum.wait_caused_ns += r.wait_caused_ns;
  }
  std::vector<HostStragglerRow> rows;
  for (auto& [host, entry] : by_host) {
    auto& [row, sum] = entry;
    row.wait_caused_us = sum.wait_caused_ns / 1e3;
    row.late_fraction = sum.last / static_cast<double>(sum.instances);
    rows.push_back(std::move(row));
  }
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.wait_caused_us > b.wait_caused_us; });
  return rows;
}

std::vector<CommStragglerRow> commRows(const RunModel& run, const Tallies& t) {
  std::vector<CommStragglerRow> rows;
  for (const auto& [index, tally] : t.comms) {
    const Communicator& comm = run.comms[index];
    const auto worst = std::max_element(tally.wait_caused_ns.begin(), tally.wait_caused_ns.end());
    const int worst_comm_rank = static_cast<int>(worst - tally.wait_caused_ns.begin());
    CommStragglerRow row;
    row.comm = comm.id;
    row.comm_name = std::string(run.name(comm.name));
    row.worst_rank = globalRankOf(comm, worst_comm_rank);
    row.wait_caused_us = *worst / 1e3;
    row.total_wait_us = tally.total_wait_ns / 1e3;
    row.instances = tally.instances;
    rows.push_back(std::move(row));
  }
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.wait_caused_us > b.wait_caused_us; });
  return rows;
}

}  // namespace

StragglerReport rankStragglers(const RunModel& run, const ClockAlignment& clocks) {
  const std::vector<std::string> hosts = hostsByRank(run);
  const Tallies t = tally(run);
  StragglerReport report;
  report.links = slowLinks(run);
  report.ranks = rankRows(t, hosts);
  classify(run, report.links, report.ranks);
  report.hosts = hostRows(t, hosts);
  report.comms = commRows(run, t);
  report.heatmap = latenessHeatmap(run, clocks);
  return report;
}

}  // namespace commtrace::report
