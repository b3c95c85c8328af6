// ArrivalWindows: stretches of a communicator's instances, at most kBuckets per seat however
// long the run, and the seat's worst stretch found wherever it lies.
#include "tools/report/analyses/arrival_windows.h"

#include <gtest/gtest.h>

namespace commtrace::report {
namespace {

// n instances of a 4-member communicator; seat 1 last at those in [late_from, late_to),
// seat 0 last at the rest; each last arrival makes the others wait 1 us each.
ArrivalWindows play(uint64_t n, uint64_t late_from, uint64_t late_to) {
  ArrivalWindows w;
  constexpr double kChance = 0.25;
  for (uint64_t i = 0; i < n; ++i) {
    const size_t last = i >= late_from && i < late_to ? 1 : 0;
    for (size_t seat = 0; seat < 4; ++seat)
      w.add(seat, {.last = seat == last ? 1.0 : 0.0, .expected_last = kChance, .var_last = kChance * (1 - kChance),
                   .wait_caused_ns = seat == last ? 3000.0 : 0.0});
    w.next();
  }
  return w;
}

TEST(ArrivalWindows, TheWorstStretchIsFoundWhereverItLiesInALongRun) {
  const ArrivalWindows w = play(100'000, 60'000, 70'000);
  const ArrivalWindows::Stretch s = w.best(1);
  // 10,000 of 100,000 instances: 32 buckets of 4,096 (the width doubled 12 times).
  EXPECT_GE(s.first_instance, 60'000u - 4'096);
  EXPECT_LE(s.end_instance, 70'000u + 4'096);
  EXPECT_GT(s.z, 50);
  EXPECT_GT(s.wait_caused_ns, 8'000 * 3000.0) << "its whole buckets inside the stretch, at least";
  EXPECT_EQ(s.median_wait_caused_ns, 0) << "seats 2 and 3 waited, never made others wait";
}

TEST(ArrivalWindows, ASeatNeverLateHasNoStretchAboveChance) {
  const ArrivalWindows w = play(5'000, 1'000, 2'000);
  EXPECT_EQ(w.best(2).z, 0);
  EXPECT_EQ(w.best(7).z, 0) << "a seat it never saw";
}

TEST(ArrivalWindows, StretchesTooShortForTheirZToMeanAnythingAreNotJudged) {
  // Last at 3 instances: chance expects 0.75 of them, under kMinStretchExpectedLast.
  const ArrivalWindows w = play(3, 0, 3);
  EXPECT_EQ(w.best(1).z, 0);
}

TEST(ArrivalWindows, MergingIntoAnEmptyTallyKeepsItsStretches) {
  const ArrivalWindows w = play(2'000, 500, 900);
  ArrivalWindows merged;
  merged.merge(w);
  merged.merge(ArrivalWindows{});
  const ArrivalWindows::Stretch a = w.best(1), b = merged.best(1);
  EXPECT_EQ(a.z, b.z);
  EXPECT_EQ(a.first_instance, b.first_instance);
  EXPECT_EQ(a.end_instance, b.end_instance);
}

}  // namespace
}  // namespace commtrace::report
