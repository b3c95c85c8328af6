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
  // A second before the run's start is that day, not the next (it read as the next day, and
  // `--from 05:18:03` on a run begun at 05:18:03.979 held nothing).
  EXPECT_EQ(resolveTimePoint({Kind::kTimeOfDay, (22 * 3600 + 13 * 60 + 19) * kSecond}, kStart), kStart - kSecond);
  EXPECT_EQ(resolveTimePoint({Kind::kTimeOfDay, (22 * 3600 + 13 * 60 + 20) * kSecond}, kStart), kStart);
  // A run begun just after midnight: 23:59 is the day before.
  const uint64_t after_midnight = kStart + (1 * 3600 + 46 * 60 + 40 + 30) * kSecond;  // 00:00:30 the next day
  EXPECT_EQ(resolveTimePoint({Kind::kTimeOfDay, (23 * 3600 + 59 * 60) * kSecond}, after_midnight), after_midnight - 90 * kSecond);
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
  EXPECT_TRUE(loadRun({.paths = {dir}, .stream = &streamed, .keep_ops = false, .window = window}, run, err)) << err.str();
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

// Steps as the lowest rank's op sequence repeats, as the overlap table counts them: a window
// of steps holds exactly those steps of every rank, and ends past the last step are refused.
TEST(TimeWindow, StepWindowsHoldThoseStepsOfEveryRank) {
  testutil::TempDir dir;
  synthetic::SyntheticRunOptions options;
  options.dir = dir.path();
  options.ranks = 8;
  options.collectives_per_rank = 2000;
  synthetic::SyntheticRunTruth truth;
  std::string error;
  ASSERT_TRUE(synthetic::writeSyntheticRun(options, truth, error)) << error;
  const Report whole = reportOf(dir.path(), {});
  ASSERT_FALSE(whole.overlap.empty());
  const int steps = whole.overlap[0].step_count;
  ASSERT_GE(steps, 20);

  const Report middle = reportOf(dir.path(), {.from = {Kind::kStep, 5}, .to = {Kind::kStep, 15}});
  EXPECT_EQ(middle.run.window_from_step, 5);
  EXPECT_EQ(middle.run.window_to_step, 15);
  EXPECT_EQ(middle.run.window_step_rank, 0);
  EXPECT_GT(middle.run.window_step_period, 0u);
  EXPECT_EQ(middle.run.ops * static_cast<uint64_t>(steps), whole.run.ops * 10);  // every step has the same ops
  for (const OverlapRow& row : middle.overlap) EXPECT_EQ(row.step_count, 10) << "rank " << row.rank;
  // From the first step and to one past the last: the whole run.
  const Report all = reportOf(dir.path(), {.from = {Kind::kStep, 0}, .to = {Kind::kStep, steps}});
  EXPECT_EQ(all.run.ops, whole.run.ops);
  EXPECT_TRUE(all.run.windowed);

  RunModel run;
  std::ostringstream err;
  EXPECT_FALSE(loadRun({.paths = {dir.path()}, .window = {.from = {}, .to = {Kind::kStep, steps + 1}}}, run, err));
  EXPECT_NE(err.str().find("--to step:" + std::to_string(steps + 1) + ": rank 0 has " + std::to_string(steps) + " steps"), std::string::npos)
      << err.str();
  err.str("");
  EXPECT_FALSE(loadRun({.paths = {dir.path()}, .window = {.from = {Kind::kStep, steps}, .to = {}}}, run, err));
  EXPECT_NE(err.str().find("--from step:" + std::to_string(steps)), std::string::npos) << err.str();
}

}  // namespace
}  // namespace commtrace::report

namespace commtrace::report {
namespace {

// What a shard's filter hands on, recorded.
struct Recorded : JoinedOpSink {
  std::vector<std::vector<MemberView>> ops;
  void collective(const CollInstance&, std::span<const MemberView> members) override { ops.emplace_back(members.begin(), members.end()); }
  void transfer(const P2pTransfer&) override {}
};

// One process's op of a one-rank communicator: CPU start on the run's clock (process 0
// starts at kStart), GPU times and the gap before it.
MemberView opAt(uint64_t cpu_s, uint64_t gpu_start, uint64_t gpu_end, uint64_t gap) {
  return {.process = 0, .comm_rank = 0, .cpu_start_ns = cpu_s * kSecond, .cpu_end_ns = cpu_s * kSecond + 1, .gpu_start_ns = gpu_start,
          .gpu_end_ns = gpu_end, .gpu_gap_ns = gap};
}

// The second of two shards cut at 10 s. Near a cut a process's ops fall on both sides, and
// the joiner may hand on an op before the op it follows: an op whose gap is measured from an
// op the shard left out loses its gap, or the root-cause walk would wait for that op (held
// everything after it: shard 1 of 2 at 16,384 ranks took 1.9 GB against shard 0's 1 GB).
TEST(TimeWindow, AShardClearsTheGapsMeasuredFromOpsItLeftOut) {
  RunModel run;
  run.processes.resize(1);
  run.processes[0].utc_minus_cpu_ns = static_cast<int64_t>(kStart);
  run.window = {.from_utc_ns = kStart + 10 * kSecond, .to_utc_ns = UINT64_MAX, .shard = 1, .shards = 2};
  Recorded out;
  TimeWindowFilter filter(run, out);
  const auto feed = [&](const MemberView& m) { filter.collective(CollInstance{}, std::span(&m, 1)); };
  feed(opAt(9, 100, 200, 50));   // before the cut: left out
  feed(opAt(11, 250, 300, 50));  // measured from the op left out (it ended 50 before): cleared
  feed(opAt(12, 400, 500, 100)); // measured from the op before, handed on: kept
  feed(opAt(13, 180, 190, 20));  // ends before the op left out as the window began: cleared, whatever it follows
  feed(opAt(5, 600, 700, 100));  // started before the cut on its earliest member: left out, after ops handed on
  feed(opAt(14, 750, 800, 50));  // measured from it: cleared
  feed(opAt(15, 900, 950, 100)); // from the one before: kept
  ASSERT_EQ(out.ops.size(), 5u);
  EXPECT_EQ(out.ops[0][0].gpu_gap_ns, MemberView::kNoGap);
  EXPECT_EQ(out.ops[1][0].gpu_gap_ns, 100u);
  EXPECT_EQ(out.ops[2][0].gpu_gap_ns, MemberView::kNoGap);
  EXPECT_EQ(out.ops[3][0].gpu_gap_ns, MemberView::kNoGap);
  EXPECT_EQ(out.ops[4][0].gpu_gap_ns, 100u);
  EXPECT_EQ(run.ops_outside_window, 0u) << "a shard's outsiders are the other shards' ops";
}

}  // namespace
}  // namespace commtrace::report
