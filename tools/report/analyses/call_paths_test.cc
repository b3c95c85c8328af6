#include "tools/report/analyses/call_paths.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace commtrace::report
