// The compute union as overlap's sweep follows it: kernels merged into final intervals in
// start order, what is final when, kernels far out of order, and memory that stays bounded
// over a long run while the sweep drops what it no longer needs.
#include "tools/report/analyses/interval_union.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "tools/report/analyses/overlap_sweep.h"

namespace commtrace::report {
namespace {

GpuInterval kernel(uint64_t start, uint64_t end) { return {start, end, 0, 0}; }

std::vector<std::pair<uint64_t, uint64_t>> spans(std::span<const GpuInterval> v) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (const GpuInterval& i : v) out.emplace_back(i.start_ns, i.end_ns);
  return out;
}

TEST(IntervalUnion, MergesOverlappingAndTouchingKernelsAndIgnoresEmptyOnes) {
  std::vector<std::pair<uint64_t, uint64_t>> seen;
  IntervalUnion u([&](const GpuInterval& i) { seen.emplace_back(i.start_ns, i.end_ns); });
  for (const GpuInterval& k : {kernel(10, 20), kernel(15, 30), kernel(30, 35), kernel(40, 40), kernel(50, 60)}) u.add(k);
  EXPECT_EQ(u.finalBefore(), 0u) << "held for reordering: nothing final yet";
  u.endOfInput();
  EXPECT_TRUE(u.ended());
  EXPECT_EQ(u.finalBefore(), UINT64_MAX);
  using Spans = std::vector<std::pair<uint64_t, uint64_t>>;
  EXPECT_EQ(spans(u.closed()), (Spans{{10, 35}, {50, 60}}));
  EXPECT_EQ(seen, (Spans{{10, 35}, {50, 60}})) << "each closed interval observed once, in order";
  std::vector<GpuInterval> in;
  u.within(30, 55, in);
  EXPECT_EQ(spans(in), (Spans{{10, 35}, {50, 60}}));
  u.within(35, 50, in);
  EXPECT_TRUE(in.empty()) << "[35, 50) lies between the intervals";
}

// Past the reorder window, the union is final before the latest kernel merged, and the
// growing interval is counted as what it is so far.
TEST(IntervalUnion, IsFinalBeforeTheLatestKernelMerged) {
  IntervalUnion u;
  const uint64_t n = IntervalUnion::kReorder + 3;
  for (uint64_t i = 0; i < n; ++i) u.add(kernel(100 * i, 100 * i + 50));
  EXPECT_EQ(u.finalBefore(), 200u) << "three kernels merged, the third at 200";
  EXPECT_EQ(u.closedBefore(), 200u) << "the third is the growing interval";
  EXPECT_EQ(u.closedCount(), 2u);
  std::vector<GpuInterval> in;
  u.within(0, 200, in);
  EXPECT_EQ(in.size(), 2u);
  u.dropEndingBy(150);
  EXPECT_EQ(u.closed().size(), 0u);
  EXPECT_EQ(u.closedCount(), 2u) << "dropped intervals still count";
  EXPECT_EQ(u.outOfOrder(), 0u);
}

TEST(IntervalUnion, AKernelFarOutOfOrderLosesItsPartBeforeTheFinalUnion) {
  IntervalUnion u;
  const uint64_t n = IntervalUnion::kReorder + 10;
  for (uint64_t i = 0; i < n; ++i) u.add(kernel(100 * (i + 1), 100 * (i + 1) + 10));
  u.add(kernel(50, 60));     // before everything final: lost
  u.add(kernel(950, 1200));  // reaches past the final part: its tail kept
  u.endOfInput();
  EXPECT_EQ(u.outOfOrder(), 2u);
  const std::span<const GpuInterval> c = u.closed();
  EXPECT_EQ(c.front().start_ns, 100u) << "the kernel at 50 was not merged";
  const auto covering = std::find_if(c.begin(), c.end(), [](const GpuInterval& i) { return i.start_ns <= 1100 && i.end_ns > 1100; });
  EXPECT_NE(covering, c.end()) << "[1000, 1200) is in the union";
}

// A run ten times longer holds no more of the compute union: the sweep drops each interval
// once its steps are summed, with kernels read a thousand items behind the ops. With many
// kernels per step, the step pattern is inferred from fewer ops than the prefix holds.
size_t mostComputeHeld(int steps, int kernels_per_step = 1) {
  OverlapSweep sweep({}, true);
  size_t most = 0;
  const auto op = [](int s, uint64_t t0, uint64_t start, uint64_t end, uint32_t key) {
    return RankOp{.issue_ns = t0 + start, .gpu_start_ns = t0 + start, .gpu_end_ns = t0 + end,
                  .op_index = static_cast<uint64_t>(s) * 2 + key, .key = key, .side = 0};
  };
  constexpr int kLag = 1000;
  for (int s = 0; s < steps + kLag; ++s) {
    if (s < steps) {
      const uint64_t t0 = 1'000'000 + 100'000ull * static_cast<uint64_t>(s);
      sweep.add(op(s, t0, 0, 10'000, 0));
      sweep.add(op(s, t0, 30'000, 35'000, 1));
    }
    if (s >= kLag) {
      const uint64_t t0 = 1'000'000 + 100'000ull * static_cast<uint64_t>(s - kLag);
      const uint64_t each = 22'000 / static_cast<uint64_t>(kernels_per_step);  // back to back over [10, 32) us
      for (int k = 0; k < kernels_per_step; ++k)
        sweep.addKernel(kernel(t0 + 10'000 + each * static_cast<uint64_t>(k), t0 + 10'000 + each * static_cast<uint64_t>(k + 1) - (k + 1 < kernels_per_step ? 10 : 0)));
    }
    most = std::max(most, sweep.compute().closed().size());
  }
  OverlapRow row;
  EXPECT_TRUE(sweep.finish(row));
  EXPECT_EQ(row.step_count, steps);
  if (kernels_per_step == 1) {
    EXPECT_NEAR(row.overlapped_us, 2.0 * steps, 1e-6) << "2 us of each step's AllGather under compute";
  }
  EXPECT_EQ(row.step_source, "inferred");
  return most;
}

TEST(IntervalUnion, HeldIntervalsDoNotGrowWithTheRun) {
  const size_t short_run = mostComputeHeld(40'000);
  const size_t long_run = mostComputeHeld(400'000);
  EXPECT_GT(short_run, 0u);
  EXPECT_LE(long_run, short_run + 16) << "short run held " << short_run;
  EXPECT_LT(long_run, 40'000u);
}

// 64 kernels per step: the prefix ends early, and what is held (the kernels of the ops the
// reorder windows hold) does not grow with the run either.
TEST(IntervalUnion, ManyKernelsPerStepAreNotHeldForTheWholePrefix) {
  const size_t short_run = mostComputeHeld(40'000, 64);  // 80,000 ops: past the 65,536-op prefix
  const size_t long_run = mostComputeHeld(100'000, 64);
  EXPECT_LE(long_run, short_run + 64);
  EXPECT_LT(short_run, 40'000u * 64 / 2) << "not the prefix's kernels";
}

}  // namespace
}  // namespace commtrace::report
