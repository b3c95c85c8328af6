#include "tools/report/analyses/call_paths.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>

#include "tests/support/report_load_support.h"
#include "tests/support/temp_dir.h"
#include "tools/report/build_report.h"
#include "tools/report/load/run_loader.h"

namespace commtrace::report {
namespace {

// Two ranks' tallies merge by path: ops, bytes and time summed, the ranks counted, the
// share of all time, most time first.
TEST(CallPaths, RanksTalliesMergeByPathMostTimeFirst) {
  RunModel run;
  run.processes.resize(3);
  run.timelines.resize(3);
  for (int p = 0; p < 3; ++p) run.processes[static_cast<size_t>(p)].rank = p;
  const NameId fwd = run.names.intern("step # / forward"), bwd = run.names.intern("step # / backward");
  run.timelines[0].comm_by_path = {{fwd, 3, 300, 3'000}, {bwd, 1, 100, 5'000}};
  run.timelines[1].comm_by_path = {{fwd, 3, 300, 1'000}, {bwd, 1, 100, 1'000}};
  // rank 2 issued under no range: its timeline has no rows
  const std::vector<CallPathRow> rows = commByCallPath(run);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].path, "step # / backward");
  EXPECT_EQ(rows[0].ops, 2u);
  EXPECT_EQ(rows[0].ranks, 2);
  EXPECT_EQ(rows[0].bytes, 200u);
  EXPECT_DOUBLE_EQ(rows[0].comm_us, 6.0);
  EXPECT_DOUBLE_EQ(rows[0].comm_share, 0.6);
  EXPECT_EQ(rows[1].path, "step # / forward");
  EXPECT_EQ(rows[1].ops, 6u);
  EXPECT_DOUBLE_EQ(rows[1].comm_share, 0.4);
}

TEST(CallPaths, EmptyWithoutNvtxPaths) {
  RunModel run;
  run.processes.resize(1);
  run.timelines.resize(1);
  EXPECT_TRUE(commByCallPath(run).empty());
}

RecordSlot pathNode(uint32_t id, uint32_t parent, const char* name) {
  RecordSlot s{};
  s.kind = RecordKind::kPhasePath;
  s.payload.phase_path = {id, parent, testing::sid(name), 0};
  return s;
}

RecordSlot computeKernel(uint64_t start, uint64_t end) {
  RecordSlot s{};
  s.kind = RecordKind::kKernelActivity;
  s.payload.kernel_activity = KernelActivityRecord{.start_ns = start, .end_ns = end, .name = testing::sid("gemm"), .activity = 1};
  return s;
}

// CUPTI's clock read with the GPU's: here they are the same clock.
RecordSlot clockSample(uint64_t t) {
  RecordSlot s{};
  s.kind = RecordKind::kClockSample;
  s.payload.clock_sample = ClockSampleRecord{.monotonic_ns = t, .realtime_ns = t, .gpu_ns = t, .cupti_ns = t, .device = 0};
  return s;
}

// The report of the run in dir, read as `commtrace report` reads it (streamed, the ops not kept).
Report streamedReport(const std::string& dir, RunModel& run) {
  StreamedAnalyses streamed;
  std::ostringstream err;
  EXPECT_TRUE(loadRun({.paths = {dir}, .stream = &streamed, .keep_ops = false, .keep_compute = false}, run, err)) << err.str();
  return buildReport(run, alignClocks(run, streamed.anchors), {}, streamed);
}

// The report read from the files: each op's exposed time (its GPU interval under no compute
// kernel of its rank) goes to its path. "fwd" ops [1000, 2000) and [5000, 6000), "bwd" ops
// [3000, 4000) and [7000, 8000); compute [1500, 3500) and [5000, 6000): fwd 500 ns exposed of
// 2000, bwd 1500 of 2000.
TEST(CallPaths, EachOpsExposedTimeGoesToItsPath) {
  testutil::TempDir dir;
  std::vector<RecordSlot> chunk{testing::commInfo(0xC0, 1, 0, 0), pathNode(1, 0, "fwd"), pathNode(2, 0, "bwd"),
                                clockSample(10), clockSample(100'000)};
  for (uint64_t i = 0; i < 4; ++i) {
    RecordSlot op = testing::coll({.comm_id = 0xC0, .seq = i, .op_index = i, .gpu_start_ns = 1000 + 2000 * i, .gpu_end_ns = 2000 + 2000 * i});
    op.payload.coll.phase_path = i % 2 == 0 ? 1 : 2;
    chunk.push_back(op);
  }
  chunk.push_back(computeKernel(1500, 3500));
  chunk.push_back(computeKernel(5000, 6000));
  testing::writeRankFile(dir.path(), "rank0", testing::rankHeader(0, 1), {chunk});

  RunModel run;
  const Report r = streamedReport(dir.path(), run);
  ASSERT_EQ(r.overlap.size(), 1u);
  ASSERT_TRUE(r.overlap[0].available) << r.overlap[0].reason;
  ASSERT_EQ(r.call_paths.size(), 2u);
  for (const CallPathRow& row : r.call_paths) {
    SCOPED_TRACE(row.path);
    EXPECT_EQ(row.ops, 2u);
    EXPECT_DOUBLE_EQ(row.comm_us, 2.0);
    EXPECT_TRUE(row.exposure_known);
    EXPECT_DOUBLE_EQ(row.exposed_us, row.path == "fwd" ? 0.5 : 1.5);
    EXPECT_DOUBLE_EQ(row.exposed_share, row.path == "fwd" ? 0.25 : 0.75);
  }

  // Without the overlap pass's measure, the exposure is not known.
  const std::vector<CallPathRow> without = commByCallPath(run);
  ASSERT_EQ(without.size(), 2u);
  EXPECT_FALSE(without[0].exposure_known);
}

// The six pieces of one AlltoAll (a send and a receive per peer) each carry their kernel's
// interval [1000, 3000), half of it under compute [2000, 2500): their path counts the kernel's
// time once (2 us, 1.5 exposed), not six times; an all-reduce under another path at the same
// time counts its own. The pieces' waits are not measured: their path's is not known.
TEST(CallPaths, AnAlltoAllsPiecesCountTheirKernelsTimeOnce) {
  testutil::TempDir dir;
  std::vector<RecordSlot> chunk{testing::commInfo(0xC0, 4, 0, 0), pathNode(1, 0, "shard_exchange"), pathNode(2, 0, "loss_scale"),
                                clockSample(10), clockSample(100'000)};
  for (int peer = 1; peer < 4; ++peer) {
    for (const bool send : {true, false}) {
      RecordSlot piece = testing::p2p(0xC0, send, peer, 0, 4096, "AlltoAll");
      piece.payload.p2p.gpu_start_ns = 1000;
      piece.payload.p2p.gpu_end_ns = 3000;
      piece.payload.p2p.phase_path = 1;
      chunk.push_back(piece);
    }
  }
  RecordSlot all_reduce = testing::coll({.comm_id = 0xC0, .gpu_start_ns = 1000, .gpu_end_ns = 3000});
  all_reduce.payload.coll.phase_path = 2;
  chunk.push_back(all_reduce);
  chunk.push_back(computeKernel(2000, 2500));
  testing::writeRankFile(dir.path(), "rank0", testing::rankHeader(0, 1), {chunk});

  RunModel run;
  const Report r = streamedReport(dir.path(), run);
  ASSERT_EQ(r.call_paths.size(), 2u);
  for (const CallPathRow& row : r.call_paths) {
    SCOPED_TRACE(row.path);
    EXPECT_EQ(row.ops, row.path == "shard_exchange" ? 6u : 1u);
    EXPECT_DOUBLE_EQ(row.comm_us, 2.0);
    ASSERT_TRUE(row.exposure_known);
    EXPECT_DOUBLE_EQ(row.exposed_us, 1.5);
    EXPECT_EQ(row.waited_known, row.path != "shard_exchange");
  }
}

// Two ranks, each step an all-reduce under "fwd" then one under "bwd"; rank 1 computes 50 us
// longer before each "bwd" one, and rank 0 waits for it there: that waiting is "bwd"'s, both
// as its ops' own (waited) and as what delays before them caused; none is "fwd"'s.
TEST(CallPaths, TheWaitingADelayCausedGoesToThePathOfTheOpItWasCreatedBefore) {
  testutil::TempDir dir;
  constexpr uint64_t kOpNs = 10'000, kGapNs = 1'000, kDelayNs = 50'000, kSteps = 8;
  for (int rank = 0; rank < 2; ++rank) {
    std::vector<RecordSlot> chunk{testing::commInfo(0xC0, 2, rank, rank), pathNode(1, 0, "fwd"), pathNode(2, 0, "bwd"), clockSample(10),
                                  clockSample(10'000'000)};
    uint64_t t = 1'000'000;  // both ranks' GPU clocks read alike
    for (uint64_t i = 0; i < 2 * kSteps; ++i) {
      const bool bwd = i % 2 == 1;
      const uint64_t start = t + kGapNs + (rank == 1 && bwd ? kDelayNs : 0);
      const uint64_t end = t + kGapNs + (bwd ? kDelayNs : 0) + kOpNs;  // when the later one arrived, plus the op
      RecordSlot op = testing::coll({.comm_id = 0xC0, .seq = i, .op_index = i, .gpu_start_ns = start, .gpu_end_ns = end});
      op.payload.coll.phase_path = bwd ? 2 : 1;
      chunk.push_back(op);
      t = end;
    }
    testing::writeRankFile(dir.path(), "rank" + std::to_string(rank), testing::rankHeader(rank, 2), {chunk});
  }
  RunModel run;
  const Report r = streamedReport(dir.path(), run);
  ASSERT_EQ(r.call_paths.size(), 2u);
  const auto row = [&](std::string_view path) {
    return *std::find_if(r.call_paths.begin(), r.call_paths.end(), [&](const CallPathRow& p) { return p.path == path; });
  };
  // Every step's "bwd" op is 50 us of rank 0's waiting (rank 1's gap before it is measured
  // from its "fwd" op).
  EXPECT_NEAR(row("bwd").wait_caused_us, kSteps * kDelayNs / 1e3, 1.0);
  EXPECT_NEAR(row("fwd").wait_caused_us, 0.0, 1e-9);
  EXPECT_NEAR(row("bwd").waited_us, kSteps * kDelayNs / 1e3, 1.0);
  EXPECT_NEAR(row("fwd").waited_us, 0.0, 1.0);
  EXPECT_LE(row("bwd").waited_us, row("bwd").comm_us) << "a wait in an op is part of its GPU time";
  ASSERT_FALSE(r.stragglers.ranks.empty());
  double ranks_caused = 0;
  for (const auto& s : r.stragglers.ranks) ranks_caused += s.wait_caused_us;
  EXPECT_NEAR(row("bwd").wait_caused_us + row("fwd").wait_caused_us, ranks_caused, 1e-6) << "the same waiting, by path instead of by rank";
}

}  // namespace
}  // namespace commtrace::report
