// The GPU gap before each op as a file's ops are read a chunk at a time, in the order they
// finished: equal to the gap over the process's ops sorted by start (gapsOf, for runs held
// whole) within a chunk, with ops on two streams outlasting each other; across chunks off
// only where the op that outlasted one was written in a later chunk.
#include "tools/report/load/gpu_gaps.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "tools/report/load/op_stream.h"

namespace commtrace::report {
namespace {

// Two streams of one process: a compute stream's collectives back to back with gaps, and a
// second stream whose long ops overlap several of them; ops ordered by when they finished.
std::vector<MemberView> twoStreams(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<uint64_t> gap(0, 5000), length(1000, 20000);
  std::vector<MemberView> ops;
  uint64_t t = 1'000'000;
  for (int i = 0; i < n; ++i) {
    t += gap(rng);
    const uint64_t end = t + length(rng);
    ops.push_back({.process = 0, .gpu_start_ns = t, .gpu_end_ns = end});
    if (i % 7 == 0) ops.push_back({.process = 0, .gpu_start_ns = t + 10, .gpu_end_ns = end + 60'000});
    if (i % 11 == 0) ops.push_back({.process = 0, .gpu_start_ns = t, .gpu_end_ns = end + 5});  // same start
    t = end;
  }
  ops.push_back({.process = 0, .gpu_start_ns = 0, .gpu_end_ns = 0});  // no GPU times: no gap
  std::stable_sort(ops.begin(), ops.end(), [](const MemberView& a, const MemberView& b) { return a.gpu_end_ns < b.gpu_end_ns; });
  return ops;
}

// The exact gaps: the ops held whole as one collective instance each.
std::vector<uint64_t> exactGaps(const std::vector<MemberView>& ops) {
  RunModel run;
  run.processes.resize(1);
  run.members = ops;
  return gapsOf(run).members;
}

std::vector<uint64_t> trackedGaps(std::vector<MemberView> ops, size_t chunk) {
  GpuGapTracker tracker;
  std::vector<MemberView*> views;
  for (size_t first = 0; first < ops.size(); first += chunk) {
    views.clear();
    for (size_t i = first; i < std::min(ops.size(), first + chunk); ++i) views.push_back(&ops[i]);
    tracker.fill(views);
  }
  std::vector<uint64_t> gaps;
  for (const MemberView& op : ops) gaps.push_back(op.gpu_gap_ns);
  return gaps;
}

TEST(GpuGapTracker, EqualsTheGapsOverTheProcessSortedByStartWithinAChunk) {
  const std::vector<MemberView> ops = twoStreams(5000, 3);
  const std::vector<uint64_t> exact = exactGaps(ops);
  EXPECT_EQ(exact.front(), MemberView::kNoGap) << "the op without GPU times sorts first by end";
  EXPECT_GT(std::count(exact.begin(), exact.end(), 0u), 1000) << "ops that started while another still ran";
  EXPECT_EQ(trackedGaps(ops, 16384), exact);
}

TEST(GpuGapTracker, AcrossChunksMissesOnlyAnOutlastingOpWrittenInALaterChunk) {
  const std::vector<MemberView> ops = twoStreams(5000, 4);
  const std::vector<uint64_t> exact = exactGaps(ops);
  for (size_t chunk : {size_t{1}, size_t{3}, size_t{64}, size_t{1000}}) {
    const std::vector<uint64_t> tracked = trackedGaps(ops, chunk);
    size_t missed = 0;
    for (size_t i = 0; i < ops.size(); ++i) {
      if (tracked[i] == exact[i]) continue;
      ++missed;
      EXPECT_EQ(exact[i], 0u) << "chunks of " << chunk << ", op " << i;
      // The op that outlasted it: started earlier, still running at its start, written later.
      const bool outlasted_later = std::any_of(ops.begin() + static_cast<std::ptrdiff_t>(i) + 1, ops.end(), [&](const MemberView& o) {
        return o.gpu_start_ns < ops[i].gpu_start_ns && o.gpu_end_ns > ops[i].gpu_start_ns;
      });
      EXPECT_TRUE(outlasted_later) << "chunks of " << chunk << ", op " << i;
    }
    // Only ops near a chunk's end can miss one: with chunks of 1,000 a few in a thousand.
    if (chunk == 1000) {
      EXPECT_LT(missed, ops.size() / 100);
    }
    EXPECT_GT(missed, 0u) << "chunks of " << chunk << ": the scenario outlasts across chunks";
  }
}

TEST(GpuGapTracker, FirstOpsHaveNoGapAndTiesSeeOnlyEarlierStarts) {
  std::vector<MemberView> ops = {{.process = 0, .gpu_start_ns = 100, .gpu_end_ns = 200},
                                 {.process = 0, .gpu_start_ns = 100, .gpu_end_ns = 300},
                                 {.process = 0, .gpu_start_ns = 350, .gpu_end_ns = 400}};
  EXPECT_EQ(trackedGaps(ops, 2), (std::vector<uint64_t>{MemberView::kNoGap, MemberView::kNoGap, 50}));
}

// One stream's ops with gaps, one of them written 2,000 ops late (the thread that recorded it
// drained in a later chunk): the ops that started before it have left the window, and the
// latest end it could be measured from is of ops that started after it. Its gap is not
// known; it did not read as 0 ("still running behind a later op"), which made the root-cause
// walk wait for an op that never comes, once per later op of its process.
TEST(GpuGapTracker, AnOpWrittenPastTheWindowHasNoGapNotZero) {
  std::vector<MemberView> ops;
  for (uint64_t i = 0; i < 5000; ++i) ops.push_back({.process = 0, .gpu_start_ns = 1'000'000 + i * 3000, .gpu_end_ns = 1'001'000 + i * 3000});
  const MemberView late = ops[1000];
  ops.erase(ops.begin() + 1000);
  ops.insert(ops.begin() + 3000, late);
  const std::vector<uint64_t> gaps = trackedGaps(ops, 100);
  EXPECT_EQ(gaps[3000], MemberView::kNoGap);
  EXPECT_EQ(gaps[1000], 5000u) << "the op after the late one: measured from the one before it";
  EXPECT_EQ(gaps[3001], 2000u) << "the rest as before";
  EXPECT_EQ(std::count(gaps.begin(), gaps.end(), 0u), 0);
}

}  // namespace
}  // namespace commtrace::report
