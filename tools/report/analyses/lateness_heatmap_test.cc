// FineBins: bounded whatever the range, every value kept (sums and counts), and the same bins
// whatever order the values came in or how they were split and merged.
#include "tools/report/analyses/lateness_heatmap.h"

#include <gtest/gtest.h>

#include <random>
#include <tuple>
#include <vector>

namespace commtrace::report {
namespace {

std::vector<std::tuple<uint64_t, int64_t, uint32_t>> binsOf(const FineBins& bins) {
  std::vector<std::tuple<uint64_t, int64_t, uint32_t>> out;
  bins.forEach([&](uint64_t centre, int64_t sum, uint32_t count) { out.emplace_back(centre, sum, count); });
  return out;
}

TEST(FineBins, SameBinsWhateverTheOrderOrSplit) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<uint64_t> at(1'790'000'000'000'000'000ull, 1'790'000'003'600'000'000ull);  // an hour of GPU clock
  std::vector<uint64_t> xs(20'000);
  for (uint64_t& x : xs) x = at(rng);
  FineBins forward, backward, left, right;
  for (size_t i = 0; i < xs.size(); ++i) {
    forward.add(xs[i], 1);
    backward.add(xs[xs.size() - 1 - i], 1);
    (i % 2 == 0 ? left : right).add(xs[i], 1);
  }
  left.merge(right);
  const auto bins = binsOf(forward);
  EXPECT_LE(bins.size(), FineBins::kFineBins);
  EXPECT_EQ(bins, binsOf(backward));
  EXPECT_EQ(bins, binsOf(left));
  uint64_t total = 0;
  for (const auto& [centre, sum, count] : bins) {
    total += count;
    EXPECT_EQ(sum, static_cast<int64_t>(count));
    EXPECT_GE(centre, forward.lowest());
    EXPECT_LE(centre, forward.highest());
  }
  EXPECT_EQ(total, xs.size());
}

// A wide run's processes get fewer bins (width_budget.h): the same values in 256 bins of a
// wider power of two, every value still counted; merged into a tally of full-size bins, the
// same as the narrow ones' (bins of one width line up).
TEST(FineBins, FewerBinsAreWiderAndMergeIntoMore) {
  FineBins full, few(256);
  for (uint64_t x = 0; x < 100'000; x += 7) {
    full.add(x, 1);
    few.add(x, 1);
  }
  const auto coarse = binsOf(few);
  EXPECT_LE(coarse.size(), 256u);
  EXPECT_GT(coarse.size(), 128u);
  EXPECT_GT(binsOf(full).size(), 512u);
  uint64_t total = 0;
  for (const auto& [centre, sum, count] : coarse) total += count;
  EXPECT_EQ(total, 14'286u) << "0, 7, ... 99,995";
  FineBins into;
  into.merge(few);
  EXPECT_EQ(binsOf(into), coarse);
}

TEST(LatenessBins, AWideRunsProcessesGetFewerFineBins) {
  const auto binsAfter = [](size_t width) {
    LatenessBins tally;
    tally.runWidth(width);
    const NamePool names;
    std::vector<MemberView> members(2);
    for (uint64_t i = 0; i < 20'000; ++i) {
      CollInstance c;
      c.func = names.find("AllReduce");
      c.seq = c.op_index = i;
      c.n_members = 2;
      for (int m = 0; m < 2; ++m)
        members[static_cast<size_t>(m)] = MemberView{.process = m, .comm_rank = m, .gpu_start_ns = 1'000'000 * i + 1000u * static_cast<uint64_t>(m),
                                                    .gpu_end_ns = 1'000'000 * i + 5000};
      tally.collective(c, members);
    }
    return binsOf(tally.processes()[0].by_gpu_end).size();
  };
  EXPECT_GT(binsAfter(1024), 512u);
  EXPECT_LE(binsAfter(4096), 256u) << "a quarter at four times the width: the floor";
  EXPECT_GT(binsAfter(4096), 128u);
}

TEST(FineBins, NarrowRangesKeepEveryPosition) {
  FineBins bins;
  for (uint64_t x = 100; x < 600; ++x) bins.add(x, static_cast<int64_t>(x));
  const auto kept = binsOf(bins);
  ASSERT_EQ(kept.size(), 500u) << "500 positions fit 1,024 bins of width 1";
  EXPECT_EQ(std::get<0>(kept.front()), 100u);
  EXPECT_EQ(std::get<1>(kept.back()), 599);
}

// Latenesses of every size in one bin, added in opposite orders: equal sums to the
// nanosecond (summed as microsecond doubles, the two orders differed in the last digits).
TEST(FineBins, SumsDoNotDependOnTheOrderOfTheValues) {
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<int64_t> lateness(0, 5'000'000'000);
  std::vector<int64_t> values(100'000);
  for (int64_t& v : values) v = lateness(rng) >> (rng() % 40);
  FineBins forward, backward;
  for (size_t i = 0; i < values.size(); ++i) {
    forward.add(42, values[i]);
    backward.add(42, values[values.size() - 1 - i]);
  }
  EXPECT_EQ(binsOf(forward), binsOf(backward));
  int64_t total = 0;
  for (int64_t v : values) total += v;
  EXPECT_EQ(std::get<1>(binsOf(forward).front()), total);
}

// A heatmap of 4 ranks over 100 columns of 10 us: rank 3 late by `late_us` in [from, to),
// every rank's noise 1 us; rank 2 has no instance in odd columns.
LatenessHeatmap heatmapWithLateRank(size_t from, size_t to, double late_us) {
  LatenessHeatmap h;
  h.ranks = {0, 1, 2, 3};
  h.axis = "aligned time";
  h.bin_us = 10;
  h.mean_lateness_us.assign(4, std::vector<double>(100, 1.0));
  for (size_t b = 1; b < 100; b += 2) h.mean_lateness_us[2][b] = -1;
  for (size_t b = from; b < to; ++b) h.mean_lateness_us[3][b] = late_us;
  return h;
}

TEST(LateStretches, ARankLateForAWhileIsLateThenAndNotAroundIt) {
  const std::vector<int> rank3{3};
  const std::vector<TimeStretch> s = lateStretches(heatmapWithLateRank(40, 60, 500), rank3);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].from_us, 400);
  EXPECT_EQ(s[0].to_us, 600);
}

TEST(LateStretches, LateColumnsCloseTogetherAreOneStretchAndFarApartTwo) {
  LatenessHeatmap h = heatmapWithLateRank(10, 20, 500);
  for (size_t b = 10; b < 20; b += 3) h.mean_lateness_us[3][b + 1] = 1;  // late at some columns of each step only
  for (size_t b = 70; b < 80; ++b) h.mean_lateness_us[3][b] = 500;
  const std::vector<int> rank3{3};
  const std::vector<TimeStretch> s = lateStretches(h, rank3);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].from_us, 100);
  EXPECT_EQ(s[0].to_us, 200);
  EXPECT_EQ(s[1].from_us, 700);
  EXPECT_EQ(s[1].to_us, 800);
}

TEST(LateStretches, NoneWithoutATimeAxisOrLateness) {
  const std::vector<int> rank3{3}, rank1{1};
  LatenessHeatmap h = heatmapWithLateRank(40, 60, 500);
  EXPECT_TRUE(lateStretches(h, rank1).empty()) << "never above the median";
  h.axis = "op order";
  EXPECT_TRUE(lateStretches(h, rank3).empty());
}

}  // namespace
}  // namespace commtrace::report
