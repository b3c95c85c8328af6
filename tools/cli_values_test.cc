#include "tools/cli_values.h"

#include <gtest/gtest.h>

namespace commtrace::tools {
namespace {

TEST(CliValues, RankLists) {
  std::string error;
  EXPECT_EQ(parseRankList("3", error), (std::vector<int>{3}));
  EXPECT_EQ(parseRankList("0-3,8", error), (std::vector<int>{0, 1, 2, 3, 8}));
  EXPECT_EQ(parseRankList("5,1-2,2", error), (std::vector<int>{1, 2, 5}));
  for (const char* bad : {"", "a", "3-1", "-1", "1,", "1-", "1.5", "0-99999999"}) {
    error.clear();
    EXPECT_FALSE(parseRankList(bad, error)) << bad;
    EXPECT_EQ(error, "'" + std::string(bad) + "' is not a rank list (like 3 or 0-3,8)");
  }
}

TEST(CliValues, StepRanges) {
  std::string error;
  EXPECT_EQ(parseStepRange("5", error), (std::pair{5, 5}));
  EXPECT_EQ(parseStepRange("10-12", error), (std::pair{10, 12}));
  EXPECT_FALSE(parseStepRange("12-10", error));
  EXPECT_EQ(error, "'12-10' is not a step or step range (like 5 or 10-12)");
}

TEST(CliValues, Durations) {
  std::string error;
  EXPECT_EQ(parseDuration("1.5s", error), 1'500'000'000);
  EXPECT_EQ(parseDuration("250ms", error), 250'000'000);
  EXPECT_EQ(parseDuration("40us", error), 40'000);
  EXPECT_EQ(parseDuration("100ns", error), 100);
  EXPECT_EQ(parseDuration("0", error), 0);
  for (const char* bad : {"", "5", "1.5", "-1s", "1h", "s", "1e30s", "nan s"}) {
    EXPECT_FALSE(parseDuration(bad, error)) << bad;
    EXPECT_EQ(error, "'" + std::string(bad) + "' is not a duration (like 1.5s, 250ms, 40us or 100ns)");
  }
}

}  // namespace
}  // namespace commtrace::tools
