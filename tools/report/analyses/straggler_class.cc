#include "tools/report/analyses/straggler_class.h"

#include "tools/report/analyses/gap_busy_time.h"

#include <algorithm>
#include <optional>

#include "core/nccl_vocab.h"
#include "tools/report/load/stats.h"
#include "tools/report/load/width_budget.h"

namespace commtrace::report {
namespace {

// The gap explains the lateness when it exceeds the peers' by at least this share of it.
constexpr double kExplainedShare = 0.5;
// A longer gap this much of which is extra compute (or a gap this idle before the enqueue)
// decides the class.
constexpr double kDecidingFraction = 0.5;
// Host delays at fewer than this share of a rank's synchronizations come now and then: an
// input pipeline's stall every few steps, not a host slow at every step.
constexpr double kIntermittentShare = 0.5;

double us(uint64_t ns) { return static_cast<double>(ns) / 1e3; }

// What the ops a rank arrived last at say about its gaps, in microseconds.
struct GapEvidence {
  StragglerEvidence::Gaps gaps;
  uint64_t syncs = 0, delays = 0;  // StragglerEvidence::Process's
  size_t sampled = 0;              // late arrivals kept for the two below
  // Of its gap's excess over its peers', the part that was compute kernels (its compute busy
  // time minus its peers' median): where every process has kernel records.
  std::vector<double> extra_compute_share;
  std::vector<double> idle_before_enqueue;  // fractions of its gap, where measurable
};

// The measures that need the clock maps, over a process's sampled late arrivals.
class SampleMeasures {
 public:
  SampleMeasures(const RunModel& run, const GapBusyTime& busy) : run_(run), busy_(busy) {}

  void add(size_t process, const StragglerEvidence::LateArrival& late, GapEvidence& e) {
    ++e.sampled;
    if (late.gap_ns == 0) return;
    const double gap_us = us(late.gap_ns);
    const std::optional<double> busy = busy_.busyUs(process, late.gpu_start_ns, late.gap_ns);
    std::vector<double> peer_busy;
    bool peers_have_kernels = true;
    for (const StragglerEvidence::PeerGap& peer : late.peers) {
      const std::optional<double> b = busy_.busyUs(static_cast<size_t>(peer.process), peer.gpu_start_ns, peer.gap_ns);
      peers_have_kernels = peers_have_kernels && b.has_value();
      if (b) peer_busy.push_back(*b);
    }
    // A send's or receive's other end does other work: without peers there is no compute
    // to hold its own against.
    if (busy && !late.peers.empty() && peers_have_kernels && gap_us > late.peer_gap_us)
      e.extra_compute_share.push_back(std::clamp((*busy - median(peer_busy)) / (gap_us - late.peer_gap_us), 0.0, 1.0));
    const LinearMap& to_gpu = run_.processes[process].gpu_from_cpu;
    if (to_gpu.valid && late.cpu_start_ns != 0) {
      const double enqueued = to_gpu.apply(static_cast<double>(late.cpu_start_ns));
      const double gap_start = static_cast<double>(late.gpu_start_ns - late.gap_ns);
      e.idle_before_enqueue.push_back(std::clamp((enqueued - gap_start) / static_cast<double>(late.gap_ns), 0.0, 1.0));
    }
  }

 private:
  const RunModel& run_;
  const GapBusyTime& busy_;
};

bool endsASlowLink(int rank, const std::vector<SlowLinkRow>& links) {
  return std::any_of(links.begin(), links.end(), [&](const SlowLinkRow& l) { return l.flagged && (l.a == rank || l.b == rank); });
}

}  // namespace

StragglerClass classFromGaps(bool measured, double excess_us, double lateness_us, bool ends_slow_link) {
  using B = StragglerBasis;
  if (!measured) return {"unknown", 0.3, B::kNoGap, {}};
  if (excess_us <= 0 || excess_us < kExplainedShare * lateness_us) {
    if (ends_slow_link) return {"network", 0.6, B::kSlowLink, {}};
    return {"unknown", 0.3, B::kEarlierOp, {}};
  }
  return {"compute", 0.5, B::kInferred, {}};
}

namespace {

StragglerClass decideFromGaps(int rank, GapEvidence& e, const std::vector<SlowLinkRow>& links) {
  using B = StragglerBasis;
  // The evidence is of the delays it created (the attribution has split off what earlier ops
  // passed on and the job's shape), so its gap excess is what there is to explain.
  const bool measured = e.gaps.gap_us.count() != 0;
  const double excess = measured ? e.gaps.excess_us.quantile(0.5) : 0;
  StragglerClass first = classFromGaps(measured, excess, excess, endsASlowLink(rank, links));
  if (first.basis != B::kInferred) return first;
  if (!e.extra_compute_share.empty()) {
    if (median(e.extra_compute_share) >= kDecidingFraction) return {"compute", 0.9, B::kComputeKernels, {}};
    return {"host", 0.9, B::kHostIdleGpu, {}};
  }
  if (!e.idle_before_enqueue.empty()) {
    if (median(e.idle_before_enqueue) >= kDecidingFraction) return {"host", 0.8, B::kEnqueuedLate, {}};
    return {"compute", 0.6, B::kEnqueuedEarly, {}};
  }
  return first;
}

// The class, with the figures it was decided on.
StragglerClass decide(int rank, GapEvidence& e, const std::vector<SlowLinkRow>& links) {
  StragglerClass c = decideFromGaps(rank, e, links);
  GapFigures& f = c.figures;
  f.ops = e.gaps.gap_us.count();
  f.sampled = e.sampled;
  if (f.ops != 0) {
    f.gap_us = e.gaps.gap_us.quantile(0.5);
    f.peer_gap_us = e.gaps.peer_gap_us.quantile(0.5);
    f.excess_us = e.gaps.excess_us.quantile(0.5);
    f.lateness_us = e.gaps.lateness_us.quantile(0.5);
  }
  if (e.syncs != 0) f.delay_fraction = static_cast<double>(e.delays) / static_cast<double>(e.syncs);
  if (c.cls == "host" && e.syncs != 0 && f.delay_fraction < kIntermittentShare) c.cls = "input";
  if (!e.extra_compute_share.empty()) f.compute_share = median(e.extra_compute_share);
  if (!e.idle_before_enqueue.empty()) f.enqueue_fraction = median(e.idle_before_enqueue);
  return c;
}

}  // namespace

void StragglerEvidence::add(const Attributed& a) {
  bool spread_found = false;  // spread_peers_ are a's
  for (size_t i = 0; i < a.members.size(); ++i) {
    const SyncMember& m = a.members[i];
    if (m.process < 0) continue;
    if (processes_.size() <= static_cast<size_t>(m.process)) resize(static_cast<size_t>(m.process) + 1);
    ++syncs_[static_cast<size_t>(m.process)];
    if (a.created[i] <= 0 || m.gap_ns == MemberView::kNoGap || m.peer_gap_ns < 0) continue;
    Process& p = processes_[static_cast<size_t>(m.process)];
    const double peer_gap = m.peer_gap_ns / 1e3;
    if (us(m.gap_ns) - peer_gap >= kMinGapSpreadUs) ++p.delays;
    p.addGaps(us(m.gap_ns), peer_gap, m.arrival_ns / 1e3);
    // The op by its process and start: the same sample whatever order the ops came in.
    const uint64_t hash = instanceHash(0, static_cast<uint64_t>(m.process), m.gpu_start_ns);
    if (!p.sample.keeps(hash, sampled_)) continue;
    LateArrival& late = p.sample.seatFor(hash, sampled_);
    late.hash = hash;
    late.gpu_start_ns = m.gpu_start_ns;
    late.gap_ns = m.gap_ns;
    late.cpu_start_ns = m.cpu_start_ns;
    late.peer_gap_us = peer_gap;
    late.peers.clear();
    if (a.transfer) {
      // Its role's other players' latest ops (the same stage of another pipeline copy).
      const std::vector<RolePeer>& peers = a.role_peers[i];
      late.peers.assign(peers.begin(), peers.begin() + static_cast<std::ptrdiff_t>(std::min(peers.size(), peers_kept_)));
    } else {
      if (!spread_found) findSpreadPeers(a), spread_found = true;
      late.peers.assign(spread_peers_.begin(), spread_peers_.end());
    }
  }
}

// The same ones whatever order the ops came in.
void StragglerEvidence::findSpreadPeers(const Attributed& a) {
  spread_peers_.clear();
  const auto isPeer = [](const SyncMember& o) { return o.last_share == 0 && o.gap_ns != MemberView::kNoGap; };
  const auto peers = static_cast<size_t>(std::count_if(a.members.begin(), a.members.end(), isPeer));
  const size_t stride = std::max<size_t>(1, (peers + peers_kept_ - 1) / peers_kept_);
  size_t k = 0;
  for (const SyncMember& o : a.members)
    if (isPeer(o) && k++ % stride == 0) spread_peers_.push_back({o.process, o.gpu_start_ns, o.gap_ns});
}

void StragglerEvidence::runWidth(size_t processes) {
  cutSamples(keptAtWidth(kSampled, processes, kFewestSampled));
  peers_kept_ = std::min(peers_kept_, keptAtWidth(kPeersKept, processes, kFewestPeersKept));
}

void StragglerEvidence::cutSamples(size_t sampled) {
  if (sampled >= sampled_) return;
  sampled_ = sampled;
  for (Process& p : processes_) p.sample.trim(sampled_);
}

void StragglerEvidence::resize(size_t processes) {
  processes_.resize(processes);
  syncs_.resize(processes);
}

void StragglerEvidence::Gaps::add(double gap, double peer_gap, double lateness) {
  gap_us.add(gap);
  peer_gap_us.add(peer_gap);
  excess_us.add(gap - peer_gap);
  lateness_us.add(lateness);
}

void StragglerEvidence::Gaps::merge(const Gaps& other) {
  gap_us.merge(other.gap_us);
  peer_gap_us.merge(other.peer_gap_us);
  excess_us.merge(other.excess_us);
  lateness_us.merge(other.lateness_us);
}

void StragglerEvidence::Process::addGaps(double gap_us, double peer_gap_us, double lateness_us) {
  staged_[staged_size_++] = {gap_us, peer_gap_us, lateness_us};
  if (staged_size_ < kStaged) return;
  unstage(gaps_);
  staged_size_ = 0;
}

void StragglerEvidence::Process::unstage(Gaps& into) const {
  for (size_t i = 0; i < staged_size_; ++i) into.add(staged_[i][0], staged_[i][1], staged_[i][2]);
}

void StragglerEvidence::Process::mergeGapsInto(Gaps& into) const {
  into.merge(gaps_);
  unstage(into);
}

void StragglerEvidence::Process::merge(const Process& other) {
  delays += other.delays;
  other.mergeGapsInto(gaps_);
}

void StragglerEvidence::merge(const StragglerEvidence& other) {
  cutSamples(other.sampled_);
  peers_kept_ = std::min(peers_kept_, other.peers_kept_);
  if (processes_.size() < other.processes_.size()) resize(other.processes_.size());
  for (size_t p = 0; p < other.processes_.size(); ++p) {
    syncs_[p] += other.syncs_[p];
    processes_[p].merge(other.processes_[p]);
    for (const LateArrival& late : other.processes_[p].sample.items()) processes_[p].sample.offer(late.hash, sampled_, late);
  }
}

std::map<int, StragglerClass> classifyStragglers(const RunModel& run, const StragglerEvidence& evidence,
                                                 const std::vector<int>& ranks, const std::vector<SlowLinkRow>& links,
                                                 const GapBusyTime& busy) {
  std::map<int, StragglerClass> out;
  if (ranks.empty()) return out;
  SampleMeasures measures(run, busy);
  for (int rank : ranks) {
    GapEvidence e;
    for (size_t p = 0; p < evidence.processes().size() && p < run.processes.size(); ++p) {
      if (run.processes[p].rank != rank) continue;
      const StragglerEvidence::Process& process = evidence.processes()[p];
      process.mergeGapsInto(e.gaps);
      e.syncs += evidence.syncs()[p];
      e.delays += process.delays;
      for (const StragglerEvidence::LateArrival& late : process.sample.items()) measures.add(p, late, e);
    }
    out[rank] = decide(rank, e, links);
  }
  return out;
}

}  // namespace commtrace::report
