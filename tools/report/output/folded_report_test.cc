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

TEST(FoldedReport, OneLinePerPathFramesTopDownTimeInMicroseconds) {
  Report r;
  r.call_paths = {{.path = "train_step # / backward / layers.1", .ops = 6, .comm_us = 1234.4},
                  {.path = "train_step # / forward", .ops = 2, .comm_us = 10.5},
                  {.path = "(no NVTX range)", .ops = 1, .comm_us = 0.2}};
  EXPECT_EQ(folded(r), "train_step #;backward;layers.1 1234\ntrain_step #;forward 11\n(no NVTX range) 0\n");
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
