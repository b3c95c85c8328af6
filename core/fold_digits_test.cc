#include "core/fold_digits.h"

#include <gtest/gtest.h>

#include <string>

namespace commtrace {
namespace {

std::string folded(std::string_view text) {
  std::string out(text.size(), '\0');
  out.resize(foldDigitRuns(text, out.data()));
  return out;
}

// Each run of digits becomes one '#'; a '#' already there takes the run after it.
TEST(FoldDigits, EachRunOfDigitsIsOneHash) {
  EXPECT_EQ(folded("train_step 12"), "train_step #");
  EXPECT_EQ(folded("layers.17.mlp"), "layers.#.mlp");
  EXPECT_EQ(folded("ProfilerStep#12"), "ProfilerStep#");
  EXPECT_EQ(folded("12"), "#");
  EXPECT_EQ(folded("forward"), "forward");
  EXPECT_EQ(folded(""), "");
}

}  // namespace
}  // namespace commtrace
