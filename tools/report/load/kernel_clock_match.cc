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

// The op end nearest `at`, within `tolerance`; -1 when none.
int64_t nearest(const std::vector<uint64_t>& ops, int64_t at, int64_t tolerance) {
  auto it = std::lower_bound(ops.begin(), ops.end(), static_cast<uint64_t>(std::max<int64_t>(at, 0)));
  int64_t best = -1, best_distance = tolerance + 1;
  for (auto candidate : {it, it == ops.begin() ? it : it - 1}) {
    if (candidate == ops.end()) continue;
    const int64_t distance = std::llabs(static_cast<int64_t>(*candidate) - at);
    if (distance < best_distance) best = static_cast<int64_t>(*candidate), best_distance = distance;
  }
  return best;
}

// Walks the kernels in order, following the offset from match to match. Returns the pairs.
std::vector<std::pair<uint64_t, uint64_t>> follow(const std::vector<uint64_t>& kernels, size_t count,
                                                  const std::vector<uint64_t>& ops, int64_t offset) {
  std::vector<std::pair<uint64_t, uint64_t>> pairs;
  uint64_t last_matched = kernels.empty() ? 0 : kernels.front();
  for (size_t i = 0; i < count; ++i) {
    const uint64_t k = kernels[i];
    const auto since = static_cast<double>(k - last_matched);
    const int64_t tolerance = kTolerance + static_cast<int64_t>(since * kDriftAllowance);
    const int64_t op = nearest(ops, static_cast<int64_t>(k) + offset, tolerance);
    if (op < 0) continue;
    pairs.emplace_back(k, static_cast<uint64_t>(op));
    offset = op - static_cast<int64_t>(k);
    last_matched = k;
  }
  return pairs;
}

}  // namespace

KernelClockMatch matchNcclKernels(std::vector<uint64_t> kernels, std::vector<uint64_t> ops) {
  KernelClockMatch out;
  out.kernels = kernels.size();
  if (kernels.empty() || ops.empty()) return out;
  std::sort(kernels.begin(), kernels.end());
  std::sort(ops.begin(), ops.end());
  // Candidate offsets, binned to the tolerance so near-equal ones are tried once.
  std::map<int64_t, int64_t> candidates;
  for (size_t i = 0; i < std::min(kProbeKernels, kernels.size()); ++i)
    for (size_t j = 0; j < std::min(kProbeOps, ops.size()); ++j) {
      const int64_t d = static_cast<int64_t>(ops[j]) - static_cast<int64_t>(kernels[i]);
      candidates.emplace(d / kTolerance, d);
    }
  int64_t best_offset = 0;
  size_t best_score = 0;
  const size_t scored = std::min(kScoredKernels, kernels.size());
  for (const auto& [bin, offset] : candidates) {
    const size_t score = follow(kernels, scored, ops, offset).size();
    if (score > best_score) best_score = score, best_offset = offset;
  }
  out.pairs = follow(kernels, kernels.size(), ops, best_offset);
  return out;
}

}  // namespace commtrace::report
