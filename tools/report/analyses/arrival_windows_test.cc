// ArrivalWindows: stretches of a communicator's instances, at most kBuckets per seat however
// long the run, and the seat's worst stretch found wherever it lies.
#include "tools/report/analyses/arrival_windows.h"

#include <gtest/gtest.h>

#include <vector>

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

// Seats asked together share each stretch's median, found once: the same answers as each
// seat asked alone, whichever stretch each seat's is.
TEST(ArrivalWindows, SeatsAskedTogetherGetWhatEachGetsAlone) {
  constexpr size_t kSeats = 8;
  constexpr double kChance = 1.0 / kSeats;
  ArrivalWindows w;
  for (uint64_t i = 0; i < 50'000; ++i) {
    // Seat 1 last through [30k, 35k), seat 2 through [10k, 12k), seat 3 through both (two in three
    // instances); the rest take turns, so every seat made the others wait somewhere and the medians are not 0.
    size_t last = i % kSeats;
    const bool turn = i % 3 == 0;  // the rest still last now and then
    if (!turn && i >= 30'000 && i < 35'000) last = i % 2 == 0 ? 1 : 3;
    if (!turn && i >= 10'000 && i < 12'000) last = i % 2 == 0 ? 2 : 3;
    for (size_t seat = 0; seat < kSeats; ++seat)
      w.add(seat, {.last = seat == last ? 1.0 : 0.0, .expected_last = kChance, .var_last = kChance * (1 - kChance),
                   .wait_caused_ns = seat == last ? 1000.0 + 10.0 * static_cast<double>(seat) : 0.0});
    w.next();
  }
  const std::vector<size_t> seats = {3, 1, 2, 0, 1, 9};
  const std::vector<ArrivalWindows::Stretch> together = w.best(seats);
  ASSERT_EQ(together.size(), seats.size());
  for (size_t i = 0; i < seats.size(); ++i) {
    const ArrivalWindows::Stretch alone = w.best(seats[i]);
    EXPECT_EQ(together[i].z, alone.z) << seats[i];
    EXPECT_EQ(together[i].wait_caused_ns, alone.wait_caused_ns) << seats[i];
    EXPECT_EQ(together[i].median_wait_caused_ns, alone.median_wait_caused_ns) << seats[i];
    EXPECT_EQ(together[i].first_instance, alone.first_instance) << seats[i];
    EXPECT_EQ(together[i].end_instance, alone.end_instance) << seats[i];
  }
  EXPECT_GT(together[1].z, kMinStretchZ);
  EXPECT_GT(together[1].median_wait_caused_ns, 0);
  EXPECT_NE(together[1].first_instance, together[2].first_instance) << "two seats, two stretches";
}

}  // namespace
}  // namespace commtrace::report
