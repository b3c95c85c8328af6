#include "tools/report/load/clock_align.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <tuple>

#include "core/nccl_vocab.h"
#include "tools/report/load/linear_fit.h"
#include "tools/report/load/width_budget.h"
#include "tools/report/load/op_stream.h"

namespace commtrace::report {
namespace {

constexpr size_t kMaxAnchorsPerProcess = 4096;  // plenty for two parameters; bounds memory
constexpr size_t kMinAnchors = 8;               // fewer only when nothing better is on offer
constexpr double kOutlierFloorNs = 2000;        // two globaltimer ticks of quantization never count as outliers
constexpr double kMaxDriftStderrPpm = 1.0;      // a slope less certain than this is noise: held at 1

// A process's anchors: a uniform sample of at most kMaxAnchorsPerProcess (reservoir
// sampling). Random rather than every n-th, because ops repeat with the step: a regular
// stride can land on the same phase of the 1024 ns globaltimer tick every time.
class AnchorSet {
 public:
  void add(FitPoint p) {
    ++seen_;
    if (points_.size() < kMaxAnchorsPerProcess) {
      points_.push_back(p);
      return;
    }
    const uint64_t slot = random_() % seen_;
    if (slot < kMaxAnchorsPerProcess) points_[slot] = p;
  }
  std::vector<FitPoint>& points() { return points_; }

 private:
  std::vector<FitPoint> points_;
  uint64_t seen_ = 0;
  std::minstd_rand random_{20260611};  // fixed seed: the same run aligns the same way every time
};

// Time on the reference's GPU clock, in ns since its first op:
// slope * (own GPU time - origin) + intercept.
struct RelativeMap {
  uint64_t origin = 0;
  LineFit fit;
  double at(uint64_t gpu_ns) const { return fit.at(static_cast<double>(static_cast<int64_t>(gpu_ns - origin))); }
};

class ClockAligner {
 public:
  ClockAligner(const RunModel& run, const AnchorSample& anchors);
  ClockAlignment align();

 private:
  int chooseReference() const;
  std::vector<AnchorSet> collectAnchors() const;
  bool alignRound();
  bool alignSameGpu();
  void fit(size_t p, std::vector<FitPoint>& anchors);
  ClockSummary summarize() const;

  const RunModel& run_;
  std::vector<const AnchorSample::Instance*> instances_;
  std::vector<std::optional<RelativeMap>> maps_;  // per process, once aligned
  std::vector<ClockFit> fits_;
  std::vector<double> residuals_ns_;  // of every anchor kept, all processes
  int reference_ = -1;
};

ClockAligner::ClockAligner(const RunModel& run, const AnchorSample& anchors)
    : run_(run), instances_(anchors.instances(run.names)), maps_(run.processes.size()), fits_(run.processes.size()) {
  for (size_t p = 0; p < run.processes.size(); ++p) {
    fits_[p].rank = run.processes[p].rank;
    fits_[p].host = run.processes[p].host;
  }
}

// The lowest global rank (its first restart generation) with GPU times.
int ClockAligner::chooseReference() const {
  int best = -1;
  for (size_t p = 0; p < run_.processes.size(); ++p) {
    const ProcessInfo& info = run_.processes[p];
    if (info.first_gpu_ns == 0) continue;
    const ProcessInfo* b = best < 0 ? nullptr : &run_.processes[static_cast<size_t>(best)];
    const auto key = [](const ProcessInfo& i) { return std::make_pair(i.rank < 0 ? INT32_MAX : i.rank, i.restart_count); };
    if (b == nullptr || key(info) < key(*b)) best = static_cast<int>(p);
  }
  return best;
}

// Per unaligned process: (its completion time, the mean completion of the already aligned
// members on the reference timeline) for each instance it shares with them.
std::vector<AnchorSet> ClockAligner::collectAnchors() const {
  std::vector<AnchorSet> anchors(run_.processes.size());
  for (const AnchorSample::Instance* instance : instances_) {
    double sum = 0;
    int aligned = 0;
    for (const auto& [process, end] : instance->ends) {
      if (!maps_[static_cast<size_t>(process)]) continue;
      sum += maps_[static_cast<size_t>(process)]->at(end);
      ++aligned;
    }
    if (aligned == 0) continue;
    for (const auto& [process, end] : instance->ends) {
      const size_t p = static_cast<size_t>(process);
      if (maps_[p]) continue;
      const uint64_t origin = run_.processes[p].first_gpu_ns;
      anchors[p].add({static_cast<double>(static_cast<int64_t>(end - origin)), sum / aligned});
    }
  }
  return anchors;
}

// Fits the processes best tied to the aligned ones: at least half as many anchors as the
// best tied has. The others wait a round, when more of their partners are aligned and
// give them more anchors. Rounds go breadth first from the reference, so chains of
// communicators reach every connected process.
bool ClockAligner::alignRound() {
  std::vector<AnchorSet> anchors = collectAnchors();
  size_t most = 0;
  for (AnchorSet& a : anchors) most = std::max(most, a.points().size());
  const size_t enough = std::max(std::min(kMinAnchors, most), most / 2);
  if (enough == 0) return false;
  for (size_t p = 0; p < anchors.size(); ++p) {
    if (anchors[p].points().size() >= enough) fit(p, anchors[p].points());
  }
  return true;
}

void ClockAligner::fit(size_t p, std::vector<FitPoint>& anchors) {
  // The fit's sums in one order whatever order the instances came in (communicator numbers,
  // shards): the offsets the same to the last digit.
  std::sort(anchors.begin(), anchors.end(), [](const FitPoint& a, const FitPoint& b) { return std::tie(a.x, a.y) < std::tie(b.x, b.y); });
  LineFit line = fitRobust(anchors, true, kOutlierFloorNs);
  uint64_t outliers = line.outliers;
  const bool drift_known = line.slope_fitted && line.kept > 2 && line.slope_stderr * 1e6 < kMaxDriftStderrPpm;
  if (!drift_known) {
    line = fitRobust(anchors, false, kOutlierFloorNs);
    outliers += line.outliers;
  }
  for (double r : residuals(anchors, line)) residuals_ns_.push_back(std::abs(r));
  const RelativeMap map{run_.processes[p].first_gpu_ns, line};
  maps_[p] = map;
  ClockFit& f = fits_[p];
  f.aligned = true;
  f.anchors = anchors.size();
  f.outliers = outliers;
  f.residual_us = line.rms / 1e3;
  f.drift_fitted = drift_known;
  f.drift_ppm = drift_known ? (1.0 / line.slope - 1.0) * 1e6 : 0.0;
  // Own clock minus the reference's at the reference's first op (where map.at() is 0).
  const uint64_t ref_origin = maps_[static_cast<size_t>(reference_)]->origin;
  f.offset_us = (static_cast<double>(static_cast<int64_t>(map.origin - ref_origin)) - line.intercept / line.slope) / 1e3;
}

// A process restarted on the same host and GPU reads the same globaltimer as its previous
// generation, even though the two share no communicator: it takes that generation's map.
bool ClockAligner::alignSameGpu() {
  bool any = false;
  for (size_t p = 0; p < maps_.size(); ++p) {
    const ProcessInfo& info = run_.processes[p];
    if (maps_[p] || info.local_rank < 0 || info.first_gpu_ns == 0) continue;
    for (size_t q = 0; q < maps_.size(); ++q) {
      const ProcessInfo& other = run_.processes[q];
      if (!maps_[q] || other.host != info.host || other.local_rank != info.local_rank) continue;
      RelativeMap map = *maps_[q];
      map.fit.intercept += map.fit.slope * static_cast<double>(static_cast<int64_t>(info.first_gpu_ns - map.origin));
      map.origin = info.first_gpu_ns;
      maps_[p] = map;
      fits_[p] = fits_[q];
      fits_[p].rank = info.rank;
      fits_[p].anchors = 0;
      fits_[p].outliers = 0;
      any = true;
      break;
    }
  }
  return any;
}

ClockSummary ClockAligner::summarize() const {
  ClockSummary s;
  s.fits = fits_;
  if (!residuals_ns_.empty()) {
    s.residual_us_p50 = upperMedian(residuals_ns_) / 1e3;
    s.residual_us_max = *std::max_element(residuals_ns_.begin(), residuals_ns_.end()) / 1e3;
  }
  s.cpu_gpu_mapped = !run_.processes.empty() &&
                     std::all_of(run_.processes.begin(), run_.processes.end(), [](const ProcessInfo& p) { return p.gpu_from_cpu.valid; });
  return s;
}

ClockAlignment ClockAligner::align() {
  reference_ = chooseReference();
  if (reference_ >= 0) {
    const size_t ref = static_cast<size_t>(reference_);
    LineFit identity;
    identity.valid = true;
    maps_[ref] = RelativeMap{run_.processes[ref].first_gpu_ns, identity};
    fits_[ref].aligned = true;
    while (alignRound() || alignSameGpu()) {
    }
  }
  ClockAlignment out;
  out.ref_from_gpu.resize(maps_.size());
  const uint64_t ref_origin = reference_ >= 0 ? maps_[static_cast<size_t>(reference_)]->origin : 0;
  for (size_t p = 0; p < maps_.size(); ++p) {
    if (maps_[p]) out.ref_from_gpu[p] = absoluteMap(maps_[p]->fit, maps_[p]->origin, ref_origin);
  }
  out.summary = summarize();
  return out;
}

constexpr size_t kFewestInstances = 64;

// Instances kept per communicator: 1,024, fewer for wide communicators so that one keeps at
// most about 262,000 member ends (each member gets an anchor from every instance), and fewer
// in a wide run (width_budget.h): a 4,096-process run's anchors held 130 MB.
size_t anchorInstancesFor(size_t members, size_t run_width) {
  constexpr size_t kMostInstances = 1024, kMostEnds = size_t{1} << 18;
  const size_t by_members = std::clamp(kMostEnds / std::max<size_t>(members, 1), kFewestInstances, kMostInstances);
  return keptAtWidth(by_members, run_width, kFewestInstances);
}

}  // namespace

ClockAlignment alignClocks(const RunModel& run, const AnchorSample& anchors) { return ClockAligner(run, anchors).align(); }

ClockAlignment alignClocks(const RunModel& run) {
  AnchorSample anchors;
  replayRun(run, anchors);
  return alignClocks(run, anchors);
}

void AnchorSample::collective(const CollInstance& c, std::span<const MemberView> members) {
  const nccl::FuncInfo* func = NamePool::ncclFunc(c.func);
  if (c.n_members < 2 || func == nullptr || !func->synchronizing) return;
  Instance instance{c.comm, c.func, c.seq, c.op_index, instanceHash(c.func, c.seq, c.op_index), c.n_members, {}};
  if (kept_.size() <= c.comm) kept_.resize(c.comm + 1);
  if (!kept_[c.comm].keeps(instance.hash, anchorInstancesFor(c.n_members, width_))) return;
  instance.ends.reserve(members.size());
  for (const MemberView& m : members)
    if (m.process >= 0 && m.gpu_end_ns != 0) instance.ends.emplace_back(m.process, m.gpu_end_ns);
  keep(std::move(instance));
}

void AnchorSample::keep(Instance instance) {
  const uint64_t hash = instance.hash;
  const size_t k = anchorInstancesFor(instance.members, width_);
  kept_[instance.comm].offer(hash, k, std::move(instance));
}

void AnchorSample::runWidth(size_t processes) {
  if (processes <= width_) return;
  width_ = processes;
  for (BottomK<Instance>& kept : kept_)
    if (!kept.items().empty()) kept.trim(anchorInstancesFor(kept.items().front().members, width_));
}


void AnchorSample::merge(const AnchorSample& other) {
  runWidth(other.width_);
  if (kept_.size() < other.kept_.size()) kept_.resize(other.kept_.size());
  for (const BottomK<Instance>& kept : other.kept_)
    for (const Instance& instance : kept.items()) keep(instance);
}

std::vector<const AnchorSample::Instance*> AnchorSample::instances(const NamePool& names) const {
  std::vector<const Instance*> out;
  for (const BottomK<Instance>& kept : kept_)
    for (const Instance& instance : kept.items()) out.push_back(&instance);
  std::sort(out.begin(), out.end(), [&](const Instance* a, const Instance* b) {
    if (std::tie(a->comm, a->op_index, a->seq) != std::tie(b->comm, b->op_index, b->seq))
      return std::tie(a->comm, a->op_index, a->seq) < std::tie(b->comm, b->op_index, b->seq);
    return names[a->func] < names[b->func];
  });
  return out;
}

}  // namespace commtrace::report
