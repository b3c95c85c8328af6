#include "tools/report/load/kernel_clock_match.h"

#include <algorithm>
#include <cstdlib>
#include <map>

namespace commtrace::report {
namespace {

constexpr size_t kProbeKernels = 16;    // first kernels whose differences propose offsets
constexpr size_t kProbeOps = 64;        // first op ends they are paired with
constexpr size_t kScoredKernels = 512;  // kernels an offset is scored on
// A kernel ends within microseconds of its last op; steps and ops are further apart.
constexpr int64_t kTolerance = 20'000;
// Drift allowance since the last match: 100 ppm of the time gone by.
constexpr double kDriftAllowance = 100e-6;
// Op ends and kernel ends held to put them back in time order (threads and streams
// interleave their records a little).
constexpr size_t kReorder = 1024;

bool later(const uint64_t& a, const uint64_t& b) { return a > b; }

int64_t toleranceAfter(uint64_t kernel, uint64_t last_matched) {
  return kTolerance + static_cast<int64_t>(static_cast<double>(kernel - std::min(kernel, last_matched)) * kDriftAllowance);
}

// The op end nearest `at` in a sorted list, within `tolerance`; -1 when none.
template <class Sorted>
int64_t nearest(const Sorted& ops, int64_t at, int64_t tolerance) {
  auto it = std::lower_bound(ops.begin(), ops.end(), static_cast<uint64_t>(std::max<int64_t>(at, 0)));
  int64_t best = -1, best_distance = tolerance + 1;
  for (auto candidate : {it, it == ops.begin() ? it : it - 1}) {
    if (candidate == ops.end()) continue;
    const int64_t distance = std::llabs(static_cast<int64_t>(*candidate) - at);
    if (distance < best_distance) best = static_cast<int64_t>(*candidate), best_distance = distance;
  }
  return best;
}

// How many of the sorted kernels match an op when the offset is followed from `offset` on.
size_t score(const std::vector<uint64_t>& kernels, const std::vector<uint64_t>& ops, int64_t offset) {
  size_t matched = 0;
  uint64_t last_matched = kernels.empty() ? 0 : kernels.front();
  for (const uint64_t k : kernels) {
    const int64_t op = nearest(ops, static_cast<int64_t>(k) + offset, toleranceAfter(k, last_matched));
    if (op < 0) continue;
    ++matched;
    offset = op - static_cast<int64_t>(k);
    last_matched = k;
  }
  return matched;
}

template <class T>
void insertSorted(std::deque<T>& d, T value) {
  if (d.empty() || value >= d.back()) d.push_back(value);
  else d.insert(std::upper_bound(d.begin(), d.end(), value), value);
}

}  // namespace

KernelClockMatcher::KernelClockMatcher(size_t op_ends_before_kernels)
    : probe_ring_(op_ends_before_kernels), op_order_(later), kernel_order_(later) {}

void KernelClockMatcher::addOpEnd(uint64_t gpu_end_ns) {
  if (!probed_) {
    // Until a kernel comes, the latest probe_ring_ in a ring (in no order: probe()
    // sorts them): a run without CUPTI holds 16 KB a process here, where a vector cut back
    // when twice as long held 32 KB (512 MB of a 16,384-rank report).
    if (!probe_kernels_.empty() || probe_ops_.size() < probe_ring_) {
      probe_ops_.push_back(gpu_end_ns);
    } else {
      probe_ops_[probe_next_] = gpu_end_ns;
      probe_next_ = (probe_next_ + 1) % probe_ring_;
    }
    return;
  }
  op_order_.push(gpu_end_ns);
  if (op_order_.size() <= kReorder) return;
  releaseOp(op_order_.popEarliest());
  matchReady(false);
}

void KernelClockMatcher::addKernelEnd(uint64_t cupti_end_ns) {
  ++out_.kernels;
  if (!probed_) {
    probe_kernels_.push_back(cupti_end_ns);
    if (probe_kernels_.size() == kScoredKernels) probe();
    return;
  }
  kernel_order_.push(cupti_end_ns);
  if (kernel_order_.size() <= kReorder) return;
  releaseKernel(kernel_order_.popEarliest());
  matchReady(false);
}

// The offset most of the first kernels agree with, among the differences of the first
// kernels' and ops' ends (binned to the tolerance so near-equal ones are tried once).
void KernelClockMatcher::probe() {
  probed_ = true;
  window_ = std::make_unique<Window>();
  std::sort(probe_kernels_.begin(), probe_kernels_.end());
  std::sort(probe_ops_.begin(), probe_ops_.end());
  std::map<int64_t, int64_t> candidates;
  for (size_t i = 0; i < std::min(kProbeKernels, probe_kernels_.size()); ++i)
    for (size_t j = 0; j < std::min(kProbeOps, probe_ops_.size()); ++j) {
      const int64_t d = static_cast<int64_t>(probe_ops_[j]) - static_cast<int64_t>(probe_kernels_[i]);
      candidates.emplace(d / kTolerance, d);
    }
  size_t best_score = 0;
  for (const auto& [bin, offset] : candidates) {
    const size_t s = score(probe_kernels_, probe_ops_, offset);
    if (s > best_score) best_score = s, offset_ = offset;
  }
  if (!probe_kernels_.empty()) last_matched_ = probe_kernels_.front();
  for (const uint64_t op : probe_ops_) releaseOp(op);
  for (const uint64_t k : probe_kernels_) releaseKernel(k);
  std::vector<uint64_t>().swap(probe_ops_);
  std::vector<uint64_t>().swap(probe_kernels_);
  matchReady(false);
}

void KernelClockMatcher::releaseOp(uint64_t end) {
  insertSorted(window_->ops, end);
  op_frontier_ = std::max(op_frontier_, end);
}

void KernelClockMatcher::releaseKernel(uint64_t end) { insertSorted(window_->kernels, end); }

// Matches the kernels in order, following the offset from match to match, each once every
// op that could be its match has been read (or at the end); then drops the ops no later
// kernel can reach: a later kernel looks no earlier than this one's target less its
// tolerance and the change a match may bring to the offset.
void KernelClockMatcher::matchReady(bool at_end) {
  while (!window_->kernels.empty()) {
    const uint64_t k = window_->kernels.front();
    const int64_t tolerance = toleranceAfter(k, last_matched_);
    const int64_t target = static_cast<int64_t>(k) + offset_;
    if (!at_end && static_cast<int64_t>(op_frontier_) < target + tolerance) return;
    const int64_t op = nearest(window_->ops, target, tolerance);
    if (op >= 0) {
      keep(k, static_cast<uint64_t>(op));
      offset_ = op - static_cast<int64_t>(k);
      last_matched_ = k;
    }
    window_->kernels.pop_front();
    const int64_t keep_from = target - 2 * tolerance - kTolerance;
    while (!window_->ops.empty() && static_cast<int64_t>(window_->ops.front()) < keep_from) window_->ops.pop_front();
  }
}

// Every stride_-th pair; when kKeptPairs are kept, every other one goes and the stride doubles.
void KernelClockMatcher::keep(uint64_t kernel, uint64_t op) {
  if (out_.matched++ % stride_ != 0) return;
  out_.pairs.emplace_back(kernel, op);
  if (out_.pairs.size() < kKeptPairs) return;
  size_t kept = 0;
  for (size_t i = 0; i < out_.pairs.size(); i += 2) out_.pairs[kept++] = out_.pairs[i];
  out_.pairs.resize(kept);
  stride_ *= 2;
}

KernelClockMatch KernelClockMatcher::finish() {
  if (!probed_) probe();
  while (!op_order_.empty()) releaseOp(op_order_.popEarliest());
  while (!kernel_order_.empty()) releaseKernel(kernel_order_.popEarliest());
  matchReady(true);
  window_->ops.clear();
  return std::move(out_);
}

KernelClockMatch matchNcclKernels(std::vector<uint64_t> nccl_kernel_ends, std::vector<uint64_t> op_ends) {
  std::sort(nccl_kernel_ends.begin(), nccl_kernel_ends.end());
  std::sort(op_ends.begin(), op_ends.end());
  KernelClockMatcher matcher;
  // One kernel first, so that every op is held for it.
  if (!nccl_kernel_ends.empty()) matcher.addKernelEnd(nccl_kernel_ends.front());
  for (const uint64_t op : op_ends) matcher.addOpEnd(op);
  for (size_t k = 1; k < nccl_kernel_ends.size(); ++k) matcher.addKernelEnd(nccl_kernel_ends[k]);
  return matcher.finish();
}

}  // namespace commtrace::report
