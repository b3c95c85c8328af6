// report --from/--to: a window's ends on the run's clock, and a windowed report of a
// synthetic run: the ops inside and outside add up to the run, and two windows that split
// it share its ops between them.
#include "tools/report/load/time_window.h"

#include <gtest/gtest.h>

#include <sstream>

#include "tests/support/temp_dir.h"
#include "tools/report/build_report.h"
#include "tools/report/load/clock_align.h"
#include "tools/report/load/run_loader.h"
#include "tools/synthetic/run_writer.h"

namespace commtrace::report {
namespace {

using Kind = TimePoint::Kind;
constexpr int64_t kSecond = 1'000'000'000;
constexpr uint64_t kStart = 1'700'000'000'000'000'000;  // 2023-11-14 22:13:20 UTC

TEST(TimeWindow, EndsResolveOnTheRunsClock) {
  EXPECT_EQ(resolveTimePoint({Kind::kSinceStart, 90 * kSecond}, kStart), kStart + 90 * kSecond);
  EXPECT_EQ(resolveTimePoint({Kind::kUtc, 12345}, kStart), 12345u);
  // 22:30:00 on the run's first day; 01:00:00 is past midnight, the next day.
  EXPECT_EQ(resolveTimePoint({Kind::kTimeOfDay, (22 * 3600 + 30 * 60) * kSecond}, kStart), kStart + (16 * 60 + 40) * kSecond);
  EXPECT_EQ(resolveTimePoint({Kind::kTimeOfDay, 3600 * kSecond}, kStart), kStart + (2 * 3600 + 46 * 60 + 40) * kSecond);
  const TimeWindow open_end = resolveWindow({.from = {Kind::kSinceStart, kSecond}, .to = {}}, kStart);
  EXPECT_EQ(open_end.from_utc_ns, kStart + kSecond);
  EXPECT_EQ(open_end.to_utc_ns, UINT64_MAX);
  EXPECT_TRUE(open_end.set());
  EXPECT_FALSE(TimeWindow{}.set());
}

Report reportOf(const std::string& dir, const TimeWindowSpec& window) {
  RunModel run;
  StreamedAnalyses streamed;
  std::ostringstream err;
  EXPECT_TRUE(loadRun({.paths = {dir}, .stream = &streamed, .keep_collectives = false, .window = window}, run, err)) << err.str();
  return buildReport(run, alignClocks(run, streamed.anchors), {}, streamed);
}

uint64_t bandwidthCount(const Report& r) {
  uint64_t n = 0;
  for (const BandwidthRow& b : r.bandwidth) n += b.count;
  return n;
}

TEST(TimeWindow, TwoWindowsSplittingARunShareItsOps) {
  testutil::TempDir dir;
  synthetic::SyntheticRunOptions options;
  options.dir = dir.path();
  options.ranks = 8;
  options.collectives_per_rank = 2000;  // 12 ms a step of five: some 4.8 s
  synthetic::SyntheticRunTruth truth;
  std::string error;
  ASSERT_TRUE(synthetic::writeSyntheticRun(options, truth, error)) << error;

  const Report whole = reportOf(dir.path(), {});
  EXPECT_FALSE(whole.run.windowed);
  EXPECT_EQ(whole.run.window_from_utc_ns, 0u);
  EXPECT_EQ(whole.run.window_to_utc_ns, 0u);
  const TimePoint split{Kind::kSinceStart, 2 * kSecond};
  const Report before = reportOf(dir.path(), {.from = {}, .to = split});
  const Report after = reportOf(dir.path(), {.from = split, .to = {}});
  EXPECT_TRUE(before.run.windowed);
  EXPECT_GT(before.run.ops, whole.run.ops / 4);
  EXPECT_GT(after.run.ops, whole.run.ops / 4);
  EXPECT_EQ(before.run.ops + after.run.ops, whole.run.ops);
  EXPECT_EQ(before.run.ops + before.run.ops_outside_window, whole.run.ops);
  EXPECT_EQ(after.run.ops_outside_window, before.run.ops);
  EXPECT_EQ(before.run.window_to_utc_ns, after.run.window_from_utc_ns);
  EXPECT_EQ(bandwidthCount(before) + bandwidthCount(after), bandwidthCount(whole));
  // Overlap reads each process's file again: its communication time splits the same way.
  ASSERT_EQ(before.overlap.size(), whole.overlap.size());
  for (size_t p = 0; p < whole.overlap.size(); ++p)
    EXPECT_NEAR(before.overlap[p].comm_us + after.overlap[p].comm_us, whole.overlap[p].comm_us, 1e-6 * whole.overlap[p].comm_us) << p;
  // The planted straggler arrives late all through the run: each half names it.
  for (const Report* r : {&before, &after}) {
    ASSERT_FALSE(r->stragglers.ranks.empty());
    const auto top = std::max_element(r->stragglers.ranks.begin(), r->stragglers.ranks.end(),
                                      [](const StragglerRow& a, const StragglerRow& b) { return a.wait_caused_us < b.wait_caused_us; });
    EXPECT_EQ(top->rank, options.straggler_rank);
  }
}

}  // namespace
}  // namespace commtrace::report
