// diff by NVTX path: a path in either run, matched by name; the most changed exposed time
// first, or communication time where a run did not measure exposure.
#include "tools/report/analyses/run_diff.h"

#include <gtest/gtest.h>

namespace commtrace::report {
namespace {

CallPathRow path(std::string name, double comm_us, double exposed_us, bool known = true) {
  return CallPathRow{.path = std::move(name), .ops = 8, .ranks = 8, .comm_us = comm_us, .exposure_known = known, .exposed_us = exposed_us};
}

TEST(RunDiff, PathsAreMatchedByNameMostChangedExposedTimeFirst) {
  Report a, b;
  a.call_paths = {path("step # / forward", 1000, 600), path("step # / backward", 2000, 100), path("step # / old", 50, 50)};
  b.call_paths = {path("step # / forward", 1000, 100), path("step # / backward", 1900, 90), path("step # / new", 30, 0)};
  const RunDiff d = diffReports(a, b);
  ASSERT_EQ(d.paths.size(), 4u);
  EXPECT_EQ(d.paths[0].path, "step # / forward") << "500 us less exposed: the change that mattered";
  EXPECT_EQ(d.paths[0].exposed_us_a, 600);
  EXPECT_EQ(d.paths[0].exposed_us_b, 100);
  EXPECT_EQ(d.paths[0].change, "");
  EXPECT_EQ(d.paths[1].path, "step # / old");
  EXPECT_EQ(d.paths[1].change, "gone");
  EXPECT_EQ(d.paths[1].exposed_us_b, PathDiffRow::kUnknown);
  EXPECT_EQ(d.paths[2].path, "step # / new");
  EXPECT_EQ(d.paths[2].change, "new");
  EXPECT_EQ(d.paths[2].comm_us_a, 0);
  EXPECT_EQ(d.paths[3].path, "step # / backward") << "10 us less exposed";
}

// Without exposure on one side the communication time is what is compared.
TEST(RunDiff, PathsWithoutExposureCompareTheirCommunicationTime) {
  Report a, b;
  a.call_paths = {path("x", 100, 0, false), path("y", 100, 0, false)};
  b.call_paths = {path("x", 100, 90), path("y", 300, 0)};
  const RunDiff d = diffReports(a, b);
  ASSERT_EQ(d.paths.size(), 2u);
  EXPECT_EQ(d.paths[0].path, "y");
  EXPECT_EQ(d.paths[1].exposed_us_a, PathDiffRow::kUnknown);
  EXPECT_EQ(d.paths[1].exposed_us_b, 90);
}

}  // namespace
}  // namespace commtrace::report
