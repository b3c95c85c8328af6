#include "tools/report/analyses/straggler_class.h"

#include <algorithm>
#include <optional>
#include <set>

#include "tools/report/format.h"
#include "tools/report/analyses/lateness.h"
#include "tools/report/analyses/stats.h"

namespace commtrace::report {
namespace {

// The gap explains the lateness when it exceeds the peers' by at least this share of it.
constexpr double kExplainedShare = 0.5;
// A longer gap this much of which is extra compute (or a gap this idle before the enqueue)
// decides the class.
constexpr double kDecidingFraction = 0.5;

// One process's op spans on its GPU clock, sorted by start, with the running latest end.
class OpSpans {
 public:
  void add(uint64_t start, uint64_t end) { spans_.push_back({start, end}); }
  void finish() {
    std::sort(spans_.begin(), spans_.end());
    uint64_t latest = 0;
    for (auto& [start, end] : spans_) end = latest = std::max(latest, end);
  }
  // The GPU time before an op starting at start since the latest end of the ops that
  // started before it (0 while one still runs); none for the process's first op.
  std::optional<uint64_t> gapBefore(uint64_t start) const {
    const auto it = std::lower_bound(spans_.begin(), spans_.end(), std::pair<uint64_t, uint64_t>{start, 0});
    if (it == spans_.begin()) return std::nullopt;
    const uint64_t latest_end = std::prev(it)->second;
    return start > latest_end ? start - latest_end : 0;
  }

 private:
  std::vector<std::pair<uint64_t, uint64_t>> spans_;  // (start, latest end so far)
};

// Compute-kernel time of one process as disjoint intervals, to measure how busy a gap was.
class BusyIntervals {
 public:
  explicit BusyIntervals(const std::vector<GpuInterval>& sorted_by_start) {
    for (const GpuInterval& k : sorted_by_start) {
      if (!merged_.empty() && k.start_ns <= merged_.back().end_ns) merged_.back().end_ns = std::max(merged_.back().end_ns, k.end_ns);
      else merged_.push_back(k);
    }
  }
  double fractionBusy(uint64_t from, uint64_t to) const {
    if (to <= from) return 0;
    auto it = std::lower_bound(merged_.begin(), merged_.end(), from,
                               [](const GpuInterval& k, uint64_t t) { return k.end_ns <= t; });
    uint64_t busy = 0;
    for (; it != merged_.end() && it->start_ns < to; ++it) busy += std::min(to, it->end_ns) - std::max(from, it->start_ns);
    return static_cast<double>(busy) / static_cast<double>(to - from);
  }

 private:
  std::vector<GpuInterval> merged_;
};

// What the ops a rank arrived last at say about its gaps, in microseconds.
struct GapEvidence {
  std::vector<double> gap_us, peer_gap_us, excess_us, lateness_us;
  // Of its gap's excess over its peers', the part that was compute kernels (its compute busy
  // time minus its peers' median): where every process has kernel records.
  std::vector<double> extra_compute_share;
  std::vector<double> idle_before_enqueue;  // fractions of its gap, where measurable
};

class Classifier {
 public:
  Classifier(const RunModel& run, const std::vector<int>& ranks)
      : run_(run), flagged_(ranks.begin(), ranks.end()), needed_(run.processes.size(), false), spans_(run.processes.size()) {}

  std::map<int, StragglerClass> classify(const std::vector<SlowLinkRow>& links) {
    collectInstances();
    buildSpans();
    for (uint32_t index : instances_) addSamples(run_.collectives[index]);
    std::map<int, StragglerClass> out;
    for (int rank : flagged_) out[rank] = decide(rank, evidence_[rank], links);
    return out;
  }

 private:
  // The instances a flagged rank arrived last at, and the processes whose gaps they need.
  void collectInstances() {
    InstanceArrivals a;
    for (uint32_t i = 0; i < run_.collectives.size(); ++i) {
      if (!arrivalsOf(run_, run_.collectives[i], a) || a.first_lateness_ns < kTieNs) continue;
      const bool wanted = std::any_of(a.members.begin(), a.members.end(), [&](const MemberArrival& m) {
        return m.last_share > 0 && flagged_.count(m.rank) != 0;
      });
      if (!wanted) continue;
      instances_.push_back(i);
      for (const MemberArrival& m : a.members) needed_[m.process] = true;
    }
  }

  void buildSpans() {
    auto add = [&](const MemberView& m) {
      if (m.gpuDuration() != 0 && needed_[m.process]) spans_[m.process].add(m.gpu_start_ns, m.gpu_end_ns);
    };
    for (const MemberView& m : run_.members) add(m);
    for (const P2pTransfer& t : run_.transfers) {
      add(t.send);
      add(t.recv);
    }
    for (OpSpans& spans : spans_) spans.finish();
    for (size_t p = 0; p < needed_.size(); ++p)
      if (needed_[p] && p < run_.timelines.size() && run_.timelines[p].has_kernel_records)
        busy_.emplace(static_cast<int32_t>(p), BusyIntervals(run_.timelines[p].compute));
  }

  std::optional<uint64_t> gapOf(const MemberArrival& m) const { return spans_[m.process].gapBefore(m.gpu_start_ns); }

  // The compute-kernel time in the GPU gap before m's op; nullopt without kernel records.
  std::optional<double> busyUs(const MemberArrival& m, uint64_t gap) const {
    const auto it = busy_.find(m.process);
    if (it == busy_.end() || gap == 0) return gap == 0 ? std::optional<double>(0.0) : std::nullopt;
    return it->second.fractionBusy(m.gpu_start_ns - gap, m.gpu_start_ns) * static_cast<double>(gap) / 1e3;
  }

  void addSamples(const CollInstance& c) {
    InstanceArrivals a;
    arrivalsOf(run_, c, a);
    std::vector<double> peer_gaps, peer_busy;
    bool peers_have_kernels = true;
    for (const MemberArrival& m : a.members) {
      const auto gap = gapOf(m);
      if (!gap || m.last_share != 0) continue;
      peer_gaps.push_back(static_cast<double>(*gap) / 1e3);
      const auto busy = busyUs(m, *gap);
      peers_have_kernels = peers_have_kernels && busy.has_value();
      if (busy) peer_busy.push_back(*busy);
    }
    if (peer_gaps.empty()) return;
    const double peer_gap = median(peer_gaps);
    for (const MemberArrival& m : a.members) {
      const auto gap = gapOf(m);
      if (m.last_share == 0 || flagged_.count(m.rank) == 0 || !gap) continue;
      GapEvidence& e = evidence_[m.rank];
      const double gap_us = static_cast<double>(*gap) / 1e3;
      e.gap_us.push_back(gap_us);
      e.peer_gap_us.push_back(peer_gap);
      e.excess_us.push_back(gap_us - peer_gap);
      e.lateness_us.push_back(static_cast<double>(a.first_lateness_ns) / 1e3);
      if (*gap == 0) continue;
      const auto busy = busyUs(m, *gap);
      if (busy && peers_have_kernels && gap_us > peer_gap)
        e.extra_compute_share.push_back(std::clamp((*busy - median(peer_busy)) / (gap_us - peer_gap), 0.0, 1.0));
      const uint64_t gap_start = m.gpu_start_ns - *gap;
      const ProcessInfo& p = run_.processes[m.process];
      const uint64_t cpu_start = run_.membersOf(c)[m.comm_rank].cpu_start_ns;
      if (p.gpu_from_cpu.valid && cpu_start != 0) {
        const double enqueued = p.gpu_from_cpu.apply(static_cast<double>(cpu_start));
        e.idle_before_enqueue.push_back(std::clamp((enqueued - static_cast<double>(gap_start)) / static_cast<double>(*gap), 0.0, 1.0));
      }
    }
  }

  static bool endsASlowLink(int rank, const std::vector<SlowLinkRow>& links) {
    return std::any_of(links.begin(), links.end(), [&](const SlowLinkRow& l) { return l.flagged && (l.a == rank || l.b == rank); });
  }

  static StragglerClass decide(int rank, GapEvidence& e, const std::vector<SlowLinkRow>& links) {
    if (e.gap_us.empty()) return {"unknown", 0.3, "no earlier op on its GPU to measure the gap before its late arrivals from"};
    const double excess = median(e.excess_us), lateness = median(e.lateness_us);
    std::string gaps = "GPU gap before the " + std::to_string(e.gap_us.size()) + " ops it arrived last at: median " +
                       fmt::duration(median(e.gap_us)) + " vs its peers' " + fmt::duration(median(e.peer_gap_us)) +
                       ", longer by a median " + fmt::duration(excess) + " against its lateness of " + fmt::duration(lateness);
    if (excess <= 0 || excess < kExplainedShare * lateness) {
      if (endsASlowLink(rank, links))
        return {"network", 0.6, gaps + "; the gap does not explain the lateness, and the rank is an end of a slow link whose ops held it up"};
      return {"unknown", 0.3, gaps + "; the gap does not explain the lateness: an earlier op held it up"};
    }
    gaps += "; the longer gap explains the lateness";
    if (!e.extra_compute_share.empty()) {
      const double share = median(e.extra_compute_share);
      const std::string share_text = "; compute kernels account for " + fmt::fixed(100 * share, 0) + "% of the longer gap";
      if (share >= kDecidingFraction) return {"compute", 0.9, gaps + share_text + ": its compute kernels ran longer"};
      return {"host", 0.9, gaps + share_text + ": the rest the GPU sat idle waiting for the host"};
    }
    if (!e.idle_before_enqueue.empty()) {
      const double idle = median(e.idle_before_enqueue);
      const std::string idle_text = "; the CPU enqueued the op " + fmt::fixed(100 * idle, 0) + "% of the way into the gap";
      if (idle >= kDecidingFraction) return {"host", 0.8, gaps + idle_text + ": the GPU waited for the host"};
      return {"compute", 0.6, gaps + idle_text + ": enqueued early, the GPU was busy (no kernel records to show with what)"};
    }
    return {"compute", 0.5, gaps + "; no kernel records or clock samples: compute inferred, host-side delay not ruled out"};
  }

  const RunModel& run_;
  std::set<int> flagged_;
  std::vector<uint32_t> instances_;
  std::vector<bool> needed_;   // per process: its gaps are wanted
  std::vector<OpSpans> spans_;  // per process, filled where needed
  std::map<int32_t, BusyIntervals> busy_;
  std::map<int, GapEvidence> evidence_;
};

}  // namespace

std::map<int, StragglerClass> classifyStragglers(const RunModel& run, const std::vector<int>& ranks,
                                                 const std::vector<SlowLinkRow>& links) {
  if (ranks.empty()) return {};
  return Classifier(run, ranks).classify(links);
}

}  // namespace commtrace::report
