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
  EXPECT_EQ(parseDuration("2min", error), 120'000'000'000);
  EXPECT_EQ(parseDuration("1.5h", error), 5'400'000'000'000);
  for (const char* bad : {"", "5", "1.5", "-1s", "1m", "s", "1e30s", "nan s"}) {
    EXPECT_FALSE(parseDuration(bad, error)) << bad;
    EXPECT_EQ(error, "'" + std::string(bad) + "' is not a duration (like 2min, 1.5s, 250ms, 40us or 100ns)");
  }
}

// report --from/--to: after the run's start, a UTC date and time (as the report prints it,
// or ISO 8601), or a UTC time of day.
TEST(CliValues, TimePoints) {
  using Kind = report::TimePoint::Kind;
  std::string error;
  const auto is = [&](const char* text, Kind kind, int64_t ns) {
    const auto p = parseTimePoint(text, error);
    ASSERT_TRUE(p) << text << ": " << error;
    EXPECT_EQ(p->kind, kind) << text;
    EXPECT_EQ(p->ns, ns) << text;
  };
  is("90s", Kind::kSinceStart, 90'000'000'000);
  is("2min", Kind::kSinceStart, 120'000'000'000);
  is("06:31:02", Kind::kTimeOfDay, ((6 * 60 + 31) * 60 + 2) * 1'000'000'000LL);
  is("06:31:02.25", Kind::kTimeOfDay, ((6 * 60 + 31) * 60 + 2) * 1'000'000'000LL + 250'000'000);
  constexpr int64_t k2023_11_14_221320 = 1'700'000'000'000'000'000;
  is("2023-11-14 22:13:20", Kind::kUtc, k2023_11_14_221320);
  is("2023-11-14T22:13:20.5Z", Kind::kUtc, k2023_11_14_221320 + 500'000'000);
  is("2023-11-14 22:13:20.000 UTC", Kind::kUtc, k2023_11_14_221320);  // as the report's time line prints it
  is("step:0", Kind::kStep, 0);
  is("step:120", Kind::kStep, 120);
  for (const char* bad : {"", "yesterday", "25:00:00", "06:31", "2023-13-01 00:00:00", "2023-11-14", "06:31:02 CET"}) {
    EXPECT_FALSE(parseTimePoint(bad, error)) << bad;
    EXPECT_EQ(error.rfind("'" + std::string(bad) + "' is not a time: ", 0), 0u) << error;
  }
  for (const char* bad : {"step:", "step:-1", "step:1x", "step:1234567890"}) {
    EXPECT_FALSE(parseTimePoint(bad, error)) << bad;
    EXPECT_EQ(error.rfind("'" + std::string(bad) + "' is not a step: ", 0), 0u) << error;
  }
}

}  // namespace
}  // namespace commtrace::tools
