// busBw over time: a communicator that slows down half way shows it in the later columns,
// with every op counted once, and tallies of two shards merged equal the whole.
#include "tools/report/analyses/bandwidth_series.h"

#include <gtest/gtest.h>

#include "tests/support/run_model_builder.h"
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
