// matchNcclKernels on kernel and op ends built from a known clock relation: the offset and
// drift are recovered, kernels that ran several ops match their last one, kernels CUPTI
// lost and ops without a kernel do not derail the match, and unrelated times match nothing.
#include "tools/report/load/kernel_clock_match.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <algorithm>
#include <random>

#include "tools/report/load/linear_fit.h"

namespace commtrace::report {
namespace {

constexpr uint64_t kCuptiBase = 1'795'000'000'000'000'000;
constexpr int64_t kOffset = -4'218'733'112;  // GPU clock minus CUPTI clock at the start

struct Workload {
  std::vector<uint64_t> kernel_ends, op_ends;
};

// Steps of a training loop: compute-dependent gaps (jittered), a few ops per step, some
// launched together in one kernel. gpu(t) = t + offset + drift * (t - base).
Workload workload(int steps, double drift_ppm, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<uint64_t> jitter(0, 300'000);
  Workload w;
  uint64_t t = kCuptiBase;
  auto gpu = [&](uint64_t cupti) {
    const double drift = static_cast<double>(cupti - kCuptiBase) * drift_ppm * 1e-6;
    return static_cast<uint64_t>(static_cast<int64_t>(cupti) + kOffset + static_cast<int64_t>(std::llround(drift)));
  };
  for (int s = 0; s < steps; ++s) {
    for (int op = 0; op < 4; ++op) {
      t += 2'000'000 + jitter(rng);           // compute before it
      const uint64_t end = t + 150'000 + jitter(rng) / 10;
      if (op == 3) w.op_ends.push_back(gpu(end - 40'000));  // a second op inside the same kernel
      w.op_ends.push_back(gpu(end - 1'800));   // the kernel's last op ends just before it
      w.kernel_ends.push_back(end);
      t = end;
    }
  }
  return w;
}

TEST(KernelClockMatch, RecoversOffsetAndDriftOverAnHour) {
  // 4 ops every ~9 ms for an hour at 20 ppm: 80 ms of drift by the end.
  const Workload w = workload(400'000, 20, 1);
  const KernelClockMatch m = matchNcclKernels(w.kernel_ends, w.op_ends);
  EXPECT_EQ(m.kernels, w.kernel_ends.size());
  EXPECT_EQ(m.matched, w.kernel_ends.size());
  EXPECT_LE(m.pairs.size(), KernelClockMatcher::kKeptPairs) << "a sample of the pairs, not every one";
  EXPECT_GE(m.pairs.size(), KernelClockMatcher::kKeptPairs / 2);
  EXPECT_GT(m.pairs.back().first - m.pairs.front().first, 3'000'000'000'000ull) << "spread over the hour";
  const LinearMap map = fitClockMap(m.pairs);
  ASSERT_TRUE(map.valid);
  EXPECT_NEAR(map.slope, 1 + 20e-6, 1e-9);
  EXPECT_LT(rmsResidual(m.pairs, map), 1'000);
}

TEST(KernelClockMatch, LostKernelsAndOpsWithoutKernelsDoNotDerailIt) {
  Workload w = workload(2'000, 5, 2);
  std::vector<uint64_t> kept;
  for (size_t i = 0; i < w.kernel_ends.size(); ++i)
    if (i % 7 != 3 && i >= 5) kept.push_back(w.kernel_ends[i]);  // CUPTI attached late, and dropped some
  const KernelClockMatch m = matchNcclKernels(kept, w.op_ends);
  EXPECT_EQ(m.matched, kept.size());
  for (const auto& [cupti, gpu] : m.pairs) {
    const auto expected = static_cast<int64_t>(cupti) + kOffset - 1'800;
    EXPECT_NEAR(static_cast<double>(gpu), static_cast<double>(expected), 1'000.0 + 5e-6 * static_cast<double>(cupti - kCuptiBase));
  }
}

TEST(KernelClockMatch, UnrelatedTimesMatchAlmostNothing) {
  const Workload a = workload(500, 0, 3), b = workload(500, 0, 4);
  const KernelClockMatch m = matchNcclKernels(a.kernel_ends, b.op_ends);
  EXPECT_LT(m.matched, a.kernel_ends.size() / 5);
  EXPECT_TRUE(matchNcclKernels({}, b.op_ends).pairs.empty());
  EXPECT_TRUE(matchNcclKernels(a.kernel_ends, {}).pairs.empty());
}

// As a file gives them: the ops as they complete, CUPTI's kernels a flush period (some
// hundred ops) later, each stream a little out of order, and ops long before CUPTI's first
// kernel. Every kernel is matched as in the run held whole.
TEST(KernelClockMatch, MatchesAsTheFileIsReadWithKernelsHandedOverLate) {
  const Workload w = workload(50'000, 20, 5);
  const KernelClockMatch whole = matchNcclKernels(w.kernel_ends, w.op_ends);
  KernelClockMatcher matcher;
  std::mt19937_64 rng(6);
  constexpr size_t kLag = 600;  // ops read before the kernel that ran with the first of them
  std::vector<uint64_t> ops = w.op_ends, kernels = w.kernel_ends;
  for (std::vector<uint64_t>* v : {&ops, &kernels})
    for (size_t block = 0; block + 8 <= v->size(); block += 8)
      std::shuffle(v->begin() + static_cast<std::ptrdiff_t>(block), v->begin() + static_cast<std::ptrdiff_t>(block + 8), rng);
  for (size_t i = 0, k = 0; i < ops.size() || k < kernels.size();) {
    if (i < ops.size() && (i < kLag || k >= kernels.size() || 5 * k + kLag > 4 * i)) {
      matcher.addOpEnd(ops[i++]);
    } else {
      matcher.addKernelEnd(kernels[k++]);
    }
  }
  const KernelClockMatch streamed = matcher.finish();
  EXPECT_EQ(streamed.kernels, w.kernel_ends.size());
  EXPECT_EQ(streamed.matched, whole.matched);
  EXPECT_EQ(whole.matched, w.kernel_ends.size());
  const LinearMap a = fitClockMap(whole.pairs), b = fitClockMap(streamed.pairs);
  ASSERT_TRUE(a.valid && b.valid);
  EXPECT_NEAR(b.slope, a.slope, 1e-9);
  EXPECT_NEAR(b.apply(static_cast<double>(kCuptiBase)), a.apply(static_cast<double>(kCuptiBase)), 100.0);
}

}  // namespace
}  // namespace commtrace::report
