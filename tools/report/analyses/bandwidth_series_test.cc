// busBw over time: a communicator that slows down half way shows it in the later columns,
// with every op counted once, and tallies of two shards merged equal the whole.
#include "tools/report/analyses/bandwidth_series.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "tests/support/run_model_builder.h"
#include "tools/report/build_report.h"
#include "tools/report/load/op_stream.h"

namespace commtrace::report {
namespace {

using testutil::RunModelBuilder;
constexpr uint64_t kBase = 1'790'000'000'000'000'000ull;  // a GPU globaltimer value
constexpr uint64_t kMiB = 1 << 20;
constexpr int kOps = 100;

// Two ranks, an AllReduce of 1 MiB every ms; the first half take 100 us, the rest 400 us.
RunModelBuilder slowingPair() {
  RunModelBuilder b({"a", "b"});
  const uint32_t comm = b.comm({0, 1}, "pair");
  for (int k = 0; k < kOps; ++k) {
    const uint64_t start = kBase + static_cast<uint64_t>(k) * 1'000'000;
    const uint64_t end = start + (k < kOps / 2 ? 100'000 : 400'000);
    b.coll(comm, "AllReduce", kMiB, {{start, end}, {start, end}});
  }
  return b;
}

ClockAlignment identityClocks(size_t processes) {
  ClockAlignment clocks;
  clocks.ref_from_gpu.assign(processes, LinearMap{1.0, 0.0, true});
  return clocks;
}

TEST(BandwidthSeries, ASlowdownShowsInTheColumnsAfterIt) {
  const RunModelBuilder b = slowingPair();
  BandwidthSeriesTally tally;
  replayRun(b.run, tally);
  const BandwidthSeries s = bandwidthSeries(b.run, identityClocks(2), tally);
  ASSERT_EQ(s.axis, "aligned time");
  ASSERT_EQ(s.rows.size(), 1u);
  const BandwidthSeriesRow& row = s.rows[0];
  EXPECT_EQ(row.comm_name, "pair");
  EXPECT_EQ(row.func, "AllReduce");
  uint64_t ops = 0;
  for (uint64_t n : row.ops) ops += n;
  EXPECT_EQ(ops, static_cast<uint64_t>(kOps));
  // AllReduce on 2 ranks: busBw = algBw x 2(n-1)/n = S / time.
  const double fast = static_cast<double>(kMiB) / 100'000, slow = static_cast<double>(kMiB) / 400'000;
  EXPECT_NEAR(row.busbw_gbs.front(), fast, 1e-9 * fast);
  EXPECT_NEAR(row.busbw_gbs.back(), slow, 1e-9 * slow);
  for (size_t col = 0; col < row.busbw_gbs.size(); ++col) {
    if (row.ops[col] == 0) EXPECT_EQ(row.busbw_gbs[col], -1.0) << col;
    else EXPECT_TRUE(std::abs(row.busbw_gbs[col] - fast) < 1e-6 || std::abs(row.busbw_gbs[col] - slow) < 1e-6 ||
                     (row.busbw_gbs[col] < fast && row.busbw_gbs[col] > slow)) << col;
  }
}

TEST(BandwidthSeries, TwoShardsMergedEqualTheWhole) {
  const RunModelBuilder b = slowingPair();
  BandwidthSeriesTally whole, odd, even;
  replayRun(b.run, whole);
  RunModelBuilder odd_ops({"a", "b"}), even_ops({"a", "b"});
  for (RunModelBuilder* part : {&odd_ops, &even_ops}) part->comm({0, 1}, "pair");
  for (size_t i = 0; i < b.run.collectives.size(); ++i) {
    const CollInstance& c = b.run.collectives[i];
    const MemberView* m = b.run.membersOf(c);
    (i % 2 == 0 ? even_ops : odd_ops).coll(0, "AllReduce", c.bytes, {{m[0].gpu_start_ns, m[0].gpu_end_ns}, {m[1].gpu_start_ns, m[1].gpu_end_ns}});
  }
  replayRun(odd_ops.run, odd);
  replayRun(even_ops.run, even);
  odd.merge(even);
  const BandwidthSeries a = bandwidthSeries(b.run, identityClocks(2), whole);
  const BandwidthSeries c = bandwidthSeries(b.run, identityClocks(2), odd);
  ASSERT_EQ(a.rows.size(), 1u);
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_EQ(a.start_us, c.start_us);
  EXPECT_EQ(a.rows[0].ops, c.rows[0].ops);
  EXPECT_EQ(a.rows[0].busbw_gbs, c.rows[0].busbw_gbs);
}

// A wide run's series gather in fewer fine bins (width_budget.h), every op still counted.
TEST(BandwidthSeries, AWideRunsSeriesHaveFewerFineBins) {
  RunModelBuilder b({"a", "b"});
  const uint32_t comm = b.comm({0, 1}, "pair");
  for (uint64_t k = 0; k < 3000; ++k) b.coll(comm, "AllReduce", kMiB, {{kBase + k * 1'000'000, kBase + k * 1'000'000 + 100'000}, {kBase + k * 1'000'000, kBase + k * 1'000'000 + 100'000}});
  const auto fineBins = [&](size_t width) {
    BandwidthSeriesTally tally;
    tally.runWidth(width);
    replayRun(b.run, tally);
    size_t bins = 0;
    uint64_t ops = 0;
    tally.series().begin()->second.bytes.forEach([&](uint64_t, int64_t, uint32_t count) { ++bins, ops += count; });
    EXPECT_EQ(ops, 3000u) << width;
    return bins;
  };
  EXPECT_GT(fineBins(1024), 512u);
  EXPECT_LE(fineBins(4096), 256u);
  EXPECT_GT(fineBins(4096), 128u);
}

// When did it get slow: the split with the largest fall, and the finding that names it.
TEST(BandwidthSeries, TheDropIsFoundWhereItStartsAndSaidInTheFindings) {
  const RunModelBuilder b = slowingPair();
  BandwidthSeriesTally tally;
  replayRun(b.run, tally);
  const BandwidthSeries series = bandwidthSeries(b.run, identityClocks(2), tally);
  const BandwidthDrop drop = largestBandwidthDrop(series);
  ASSERT_EQ(drop.row, 0);
  EXPECT_EQ(series.rows[0].comm_name, "pair");
  EXPECT_NEAR(drop.before_gbs, static_cast<double>(kMiB) / 100'000, 1e-6);
  EXPECT_NEAR(drop.after_gbs, static_cast<double>(kMiB) / 400'000, 1e-6);
  EXPECT_EQ(drop.ops, static_cast<uint64_t>(kOps));
  EXPECT_EQ(drop.ops_after, static_cast<uint64_t>(kOps / 2));
  EXPECT_NEAR(drop.at_us, 50'000, 1'000) << "op 50 started 50 ms into the run";

  const Report report = buildReport(b.run, identityClocks(2));
  const auto finding = std::find_if(report.findings.begin(), report.findings.end(),
                                    [](const std::string& f) { return f.rfind("Slowdown:", 0) == 0; });
  ASSERT_NE(finding, report.findings.end());
  EXPECT_EQ(*finding, "Slowdown: busBw of AllReduce on pair fell from 10.49 GB/s to 2.62 GB/s from +49.6 ms on the aligned "
                      "timeline (50 of its 100 instances after it).");
}

// Healthy runs stay quiet: the same rate throughout, or one that wanders by up to 20 %.
TEST(BandwidthSeries, NoDropWhereTheRateHolds) {
  std::mt19937_64 rng(9);
  for (const bool wandering : {false, true}) {
    RunModelBuilder b({"a", "b"});
    const uint32_t comm = b.comm({0, 1}, "pair");
    for (int k = 0; k < 400; ++k) {
      const uint64_t start = kBase + static_cast<uint64_t>(k) * 1'000'000;
      const uint64_t length = wandering ? 100'000 + rng() % 20'000 : 100'000;
      b.coll(comm, "AllReduce", kMiB, {{start, start + length}, {start, start + length}});
    }
    BandwidthSeriesTally tally;
    replayRun(b.run, tally);
    EXPECT_EQ(largestBandwidthDrop(bandwidthSeries(b.run, identityClocks(2), tally)).row, -1) << wandering;
  }
}

TEST(BandwidthSeries, NoSeriesWithoutAlignedClocks) {
  const RunModelBuilder b = slowingPair();
  BandwidthSeriesTally tally;
  replayRun(b.run, tally);
  const BandwidthSeries s = bandwidthSeries(b.run, ClockAlignment{}, tally);
  EXPECT_EQ(s.axis, "not aligned");
  EXPECT_TRUE(s.rows.empty());
}

}  // namespace
}  // namespace commtrace::report
