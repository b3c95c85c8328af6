// Folded stacks: one line per NVTX path, its frames from the top down, its GPU time in us.
#include "tools/report/output/folded_report.h"

#include <gtest/gtest.h>

#include <sstream>

namespace commtrace::report {
namespace {

std::string folded(const Report& r) {
  std::ostringstream out;
  writeFolded(r, out);
  return out.str();
}

// Without compute records (the exposure of a path not known) the values are the whole time.
TEST(FoldedReport, OneLinePerPathFramesTopDownTimeInMicroseconds) {
  Report r;
  r.call_paths = {{.path = "train_step # / backward / layers.1", .ops = 6, .comm_us = 1234.4},
                  {.path = "train_step # / forward", .ops = 2, .comm_us = 10.5},
                  {.path = "(no NVTX range)", .ops = 1, .comm_us = 0.2}};
  EXPECT_EQ(folded(r), "train_step #;backward;layers.1 1234\ntrain_step #;forward 11\n(no NVTX range) 0\n");
  EXPECT_STREQ(foldedMeasure(r), "communication");
}

// Where every path's exposure is known, the values are the exposed time: the flame graph
// of what a fix could take off the step.
TEST(FoldedReport, ExposedTimeWhereEveryPathsIsKnown) {
  Report r;
  r.call_paths = {{.path = "fwd", .ops = 6, .comm_us = 100, .exposure_known = true, .exposed_us = 61.2},
                  {.path = "bwd", .ops = 2, .comm_us = 50, .exposure_known = true, .exposed_us = 0}};
  EXPECT_EQ(folded(r), "fwd 61\nbwd 0\n");
  EXPECT_STREQ(foldedMeasure(r), "exposed communication");
  r.call_paths[1].exposure_known = false;
  EXPECT_EQ(folded(r), "fwd 100\nbwd 50\n");
}

// A name with the frame separator or a line break in it stays one frame on one line.
TEST(FoldedReport, ANameStaysOneFrame) {
  Report r;
  r.call_paths = {{.path = "a;b / line\nbreak", .ops = 1, .comm_us = 3}};
  EXPECT_EQ(folded(r), "a:b;line break 3\n");
}

TEST(FoldedReport, NothingWithoutPaths) { EXPECT_EQ(folded(Report{}), ""); }

}  // namespace
}  // namespace commtrace::report
