#include "tools/report/analyses/overlap_sweep.h"

#include <algorithm>
#include <span>
#include <tuple>

namespace commtrace::report {
namespace {

using Window = StepWindow;

uint64_t clippedLength(std::span<const GpuInterval> v, Window w) {
  uint64_t total = 0;
  for (const GpuInterval& i : v) total += std::min(i.end_ns, w.end_ns) - std::max(i.start_ns, w.start_ns);
  return total;
}

// Length of (a ∩ b ∩ w) for two sorted, disjoint lists.
uint64_t intersectionLength(std::span<const GpuInterval> a, std::span<const GpuInterval> b, Window w) {
  uint64_t total = 0;
  for (size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    const uint64_t lo = std::max({a[i].start_ns, b[j].start_ns, w.start_ns});
    const uint64_t hi = std::min({a[i].end_ns, b[j].end_ns, w.end_ns});
    if (hi > lo) total += hi - lo;
    if (a[i].end_ns < b[j].end_ns) ++i;
    else ++j;
  }
  return total;
}

struct Coverage {
  uint64_t comm_ns = 0;
  uint64_t overlapped_ns = 0;
  uint64_t idle_ns = 0;  // neither communication nor compute
  uint64_t compute_only_ns = 0;
};

// Of window w, given its communication's length, its compute's, and their overlap.
Coverage coverageOf(uint64_t comm_ns, uint64_t overlapped_ns, uint64_t compute_ns, Window w) {
  Coverage cov{comm_ns, overlapped_ns, 0, 0};
  const uint64_t busy = comm_ns + compute_ns - overlapped_ns;
  cov.idle_ns = w.end_ns - w.start_ns - busy;
  cov.compute_only_ns = busy - comm_ns;
  return cov;
}

double us(uint64_t ns) { return static_cast<double>(ns) / 1e3; }

// OverlapRow or StepOverlap. Without compute records only the communication time is known.
template <class Row>
void fillFromCoverage(const Coverage& cov, bool available, Row& row) {
  row.comm_us = us(cov.comm_ns);
  if (!available) return;
  row.overlapped_us = us(cov.overlapped_ns);
  row.exposed_us = us(cov.comm_ns - cov.overlapped_ns);
  row.idle_us = us(cov.idle_ns);
  row.compute_only_us = us(cov.compute_only_ns);
}

void addTo(StepOverlap& sum, const StepOverlap& step) {
  sum.last_step = step.last_step;
  sum.comm_us += step.comm_us;
  sum.overlapped_us += step.overlapped_us;
  sum.exposed_us += step.exposed_us;
  sum.idle_us += step.idle_us;
  sum.compute_only_us += step.compute_only_us;
}

}  // namespace

OverlapSweep::OverlapSweep(std::vector<StepWindow> nvtx_steps, bool available, IntervalUnion::Observer on_compute, bool by_path)
    : compute_(std::move(on_compute)),
      available_(available),
      by_path_(available && by_path),
      nvtx_(!nvtx_steps.empty()),
      source_(nvtx_ ? "nvtx" : "none"),
      program_order_(laterInProgram) {
  windows_.assign(nvtx_steps.begin(), nvtx_steps.end());
  if (!available_) compute_.endOfInput();  // no kernel will be placed
}

void OverlapSweep::addKernel(const GpuInterval& kernel) {
  const uint64_t final_before = compute_.finalBefore();
  compute_.add(kernel);
  if (compute_.finalBefore() == final_before) return;
  if (!prefix_done_ && compute_.closed().size() >= kPrefixComputeIntervals) endPrefix();
  advance();
  compute_.dropEndingBy(computeNeededFrom());
}

void OverlapSweep::add(const RankOp& op) {
  if (!prefix_done_) {
    prefix_.push_back(op);
    if (prefix_.size() == kPrefixOps) endPrefix();
    return;
  }
  program_order_.push(op);
  if (program_order_.size() > kReorderOps) release(program_order_.popEarliest());
}

// The prefix in program order gives the step period; its last kReorderOps ops go on waiting
// in the reorder buffer, as later ops may still come before them.
void OverlapSweep::endPrefix() {
  prefix_done_ = true;
  const StepPeriod inferred = stepPeriodOf(prefix_);
  if (!nvtx_ && inferred.period != 0) {
    steps_period_ = inferred;
    source_ = "inferred";
  }
  const size_t held = std::min(prefix_.size(), kReorderOps);
  for (size_t i = 0; i + held < prefix_.size(); ++i) release(prefix_[i]);
  for (size_t i = prefix_.size() - held; i < prefix_.size(); ++i) program_order_.push(prefix_[i]);
  std::vector<RankOp>().swap(prefix_);
}

void OverlapSweep::release(const RankOp& op) {
  if (released_ > 0 && laterInProgram(last_released_, op)) ++out_of_order_;
  last_released_ = op;
  const uint64_t position = released_++;
  if (steps_period_.beginsStep(position) && position > steps_period_.first) stepBoundary(false);
  if (op.gpu_end_ns == 0) return;
  if (steps_period_.period != 0 && position >= steps_period_.first) {
    open_step_.start_ns = std::min(open_step_.start_ns, op.gpu_start_ns);
    open_step_.max_end_ns = std::max(open_step_.max_end_ns, op.gpu_end_ns);
  }
  if (by_path_) {
    exposure_pending_.push_back(op);
    pending_starts_.insert(op.gpu_start_ns);
  }
  const uint64_t final_before = comm_.finalBefore();
  comm_.add(GpuInterval{op.gpu_start_ns, op.gpu_end_ns, 0, 0});
  if (comm_.finalBefore() != final_before) advance();
}

void OverlapSweep::advance() {
  attributeExposure();
  countOverlaps();
  sumSteps(false);
  countCompute();
}

uint64_t OverlapSweep::computeNeededFrom() const {
  if (comm_.firstStart() == 0) return 0;  // compute_ns_ starts at the first communication kernel
  uint64_t from = std::min(comm_.closedBefore(), uncountedFrom());
  if (!pending_starts_.empty()) from = std::min(from, *pending_starts_.begin());
  if (!windows_.empty()) from = std::min(from, windows_.front().start_ns);
  if (have_pending_step_) from = std::min(from, pending_step_.start_ns);
  from = std::min(from, open_step_.start_ns);
  return from;
}

// A step runs from its first op's GPU start to the next step's (a kernel still running then
// counts in the next step); the last one to the end of its last op. A step none of whose ops
// has GPU times is no step.
void OverlapSweep::stepBoundary(bool at_end) {
  if (open_step_.max_end_ns != 0) {
    if (have_pending_step_) windows_.push_back({pending_step_.start_ns, std::max(pending_step_.start_ns, open_step_.start_ns)});
    pending_step_ = open_step_;
    have_pending_step_ = true;
  }
  open_step_ = OpenStep{};
  if (at_end && have_pending_step_) windows_.push_back({pending_step_.start_ns, pending_step_.max_end_ns});
}

uint64_t OverlapSweep::uncountedFrom() const {
  const std::span<const GpuInterval> uncounted = comm_.closedFrom(comm_counted_);
  return uncounted.empty() ? UINT64_MAX : uncounted.front().start_ns;
}

void OverlapSweep::countOverlaps() {
  for (const GpuInterval& comm : comm_.closedFrom(comm_counted_)) {
    if (comm.end_ns > compute_.finalBefore()) return;
    const Window w{comm.start_ns, comm.end_ns};
    comm_ns_ += w.end_ns - w.start_ns;
    compute_.within(w.start_ns, w.end_ns, compute_scratch_);
    overlapped_ns_ += intersectionLength({&comm, 1}, compute_scratch_, w);
    ++comm_counted_;
  }
}

// In release order: an op waits for the compute union to be final past its end (a long op
// holds back the shorter ones after it, which wait with their compute kept).
void OverlapSweep::attributeExposure() {
  while (!exposure_pending_.empty() && exposure_pending_.front().gpu_end_ns <= compute_.finalBefore()) {
    const RankOp& op = exposure_pending_.front();
    PathExposed& path = exposed_by_path_[op.path];
    for (const PathSpan::Part& part : path.span.take(op.gpu_start_ns, op.gpu_end_ns)) {
      if (part.length() == 0) continue;
      const Window w{part.start_ns, part.end_ns};
      const GpuInterval self{w.start_ns, w.end_ns, 0, 0};
      compute_.within(w.start_ns, w.end_ns, compute_scratch_);
      path.exposed_ns += w.end_ns - w.start_ns - intersectionLength({&self, 1}, compute_scratch_, w);
    }
    pending_starts_.erase(pending_starts_.find(op.gpu_start_ns));
    exposure_pending_.pop_front();
  }
}

std::unordered_map<uint32_t, uint64_t> OverlapSweep::exposedByPath() const {
  std::unordered_map<uint32_t, uint64_t> out;
  for (const auto& [path, exposed] : exposed_by_path_) out.emplace(path, exposed.exposed_ns);
  return out;
}

void OverlapSweep::countCompute() {
  const uint64_t first_comm = comm_.firstStart();
  if (first_comm == 0) return;
  for (const GpuInterval& k : compute_.closedFrom(compute_counted_))
    if (k.end_ns > first_comm) compute_ns_ += k.end_ns - std::max(k.start_ns, first_comm);
  compute_counted_ = compute_.closedCount();
}

// A window's part of the union is final once every interval starting before its end has
// been merged: the reorder buffer gives them in start order, so once one starting at or after its
// end has come out (a later one can only extend the union past the window), or at the end
// of the run.
void OverlapSweep::sumSteps(bool at_end) {
  while (!windows_.empty() && (at_end || comm_.finalBefore() >= windows_.front().end_ns) &&
         windows_.front().end_ns <= compute_.finalBefore()) {
    sumStep(windows_.front());
    if (all_windows_ != nullptr) all_windows_->push_back(windows_.front());
    windows_.pop_front();
  }
  // What a later window may still need: from the next waiting window's start, or from the
  // next inferred step's.
  uint64_t keep_from = UINT64_MAX;
  if (!windows_.empty()) keep_from = std::min(keep_from, windows_.front().start_ns);
  if (have_pending_step_) keep_from = std::min(keep_from, pending_step_.start_ns);
  keep_from = std::min(keep_from, open_step_.start_ns);
  comm_.dropEndingBy(std::min(keep_from, uncountedFrom()));
}

void OverlapSweep::sumStep(const Window& w) {
  comm_.within(w.start_ns, w.end_ns, comm_scratch_);
  const std::vector<GpuInterval>& comm = comm_scratch_;
  compute_.within(w.start_ns, w.end_ns, compute_scratch_);
  const std::vector<GpuInterval>& compute = compute_scratch_;
  const uint64_t comm_ns = clippedLength(comm, w);
  StepOverlap step;
  step.step = step.last_step = steps_;
  // Relative to the first communication kernel; NVTX steps may start before it.
  const uint64_t first_comm = comm_.firstStart();
  step.start_us = static_cast<double>(static_cast<int64_t>(w.start_ns - first_comm)) / 1e3;
  fillFromCoverage(coverageOf(comm_ns, intersectionLength(comm, compute, w), clippedLength(compute, w), w), available_, step);
  if (steps_ == 0) first_step_us_ = step.start_us;
  last_step_us_ = step.start_us;
  ++steps_;
  if (available_ && step.exposed_us > most_exposed_us_) {
    most_exposed_us_ = step.exposed_us;
    const auto rel = [&](uint64_t t) { return static_cast<double>(static_cast<int64_t>(t - first_comm)) / 1e3; };
    most_exposed_ = StepTimeline{.step = step.step, .start_us = rel(w.start_ns), .end_us = rel(w.end_ns), .comm = {}, .compute = {}};
    for (const GpuInterval& i : comm) most_exposed_.comm.emplace_back(rel(std::max(i.start_ns, w.start_ns)), rel(std::min(i.end_ns, w.end_ns)));
    for (const GpuInterval& i : compute)
      most_exposed_.compute.emplace_back(rel(std::max(i.start_ns, w.start_ns)), rel(std::min(i.end_ns, w.end_ns)));
  }
  keepStretch(step);
}

// At most kMaxStepPoints stretches of stretch_ consecutive steps (the last may hold fewer);
// when one more would not fit, neighbours merge and stretches double.
void OverlapSweep::keepStretch(const StepOverlap& step) {
  if (!stretches_.empty() && static_cast<size_t>(stretches_.back().last_step - stretches_.back().step + 1) < stretch_) {
    addTo(stretches_.back(), step);
    return;
  }
  if (stretches_.size() == OverlapRow::kMaxStepPoints) {
    std::vector<StepOverlap> merged;
    for (size_t i = 0; i < stretches_.size(); i += 2) {
      merged.push_back(stretches_[i]);
      if (i + 1 < stretches_.size()) addTo(merged.back(), stretches_[i + 1]);
    }
    stretches_ = std::move(merged);
    stretch_ *= 2;
    return keepStretch(step);
  }
  stretches_.push_back(step);
}

bool OverlapSweep::finish(OverlapRow& row, std::vector<StepWindow>* windows) {
  all_windows_ = windows;
  compute_.endOfInput();
  if (!prefix_done_) endPrefix();
  while (!program_order_.empty()) release(program_order_.popEarliest());
  attributeExposure();
  if (steps_period_.period != 0) stepBoundary(true);
  comm_.endOfInput();
  if (comm_.closedCount() == 0) return false;
  sumSteps(true);
  countOverlaps();
  countCompute();

  // compute_ns_ runs from the first communication kernel on; the part after the last one's
  // end is still held (computeNeededFrom kept it).
  uint64_t compute_after_ns = 0;
  const Window span{comm_.firstStart(), comm_.lastEnd()};
  for (const GpuInterval& k : compute_.closed())
    if (k.end_ns > span.end_ns) compute_after_ns += k.end_ns - std::max(k.start_ns, span.end_ns);
  fillFromCoverage(coverageOf(comm_ns_, overlapped_ns_, compute_ns_ - compute_after_ns, span), available_, row);
  if (available_ && row.comm_us > 0) row.overlap_pct = 100.0 * row.overlapped_us / row.comm_us;
  row.step_source = steps_ > 0 ? source_ : "none";
  row.step_count = steps_;
  if (steps_ >= 2) row.mean_step_us = (last_step_us_ - first_step_us_) / static_cast<double>(steps_ - 1);
  row.steps = std::move(stretches_);
  row.out_of_order = out_of_order_ + comm_.outOfOrder();
  if (available_ && steps_ > 0) row.most_exposed_step = std::move(most_exposed_);
  return true;
}

}  // namespace commtrace::report
