#include "core/tsc_clock.h"

#include <gtest/gtest.h>
#include <time.h>

#include <atomic>
#include <cmath>
#include <thread>
#include <vector>

#include "core/clock.h"

namespace commtrace {
namespace {

constexpr uint64_t kPeriodNs = 200'000'000;  // the flusher's default

// A TSC at 2.5 GHz whose CLOCK_MONOTONIC runs at `ns_per_tick` from `origin` on.
struct FakeTimeline {
  double ns_per_tick = 0.4;
  uint64_t origin_tsc = 1'000'000'000, origin_ns = 5'000'000'000;
  uint64_t monoAt(uint64_t tsc) const {
    return origin_ns + static_cast<uint64_t>(std::llround(static_cast<double>(tsc - origin_tsc) * ns_per_tick));
  }
  uint64_t tscAt(uint64_t ns) const {
    return origin_tsc + static_cast<uint64_t>(std::llround(static_cast<double>(ns - origin_ns) / ns_per_tick));
  }
  TscClock::Reading readingAt(uint64_t ns) const { return {tscAt(ns), monoAt(tscAt(ns))}; }
  // From `ns` on, the clock runs at a new rate (NTP slewing), without a step.
  void changeRate(uint64_t ns, double new_ns_per_tick) {
    origin_tsc = tscAt(ns);
    origin_ns = ns;
    ns_per_tick = new_ns_per_tick;
  }
};

int64_t errorAt(const TscClock& clock, const FakeTimeline& truth, uint64_t tsc) {
  return static_cast<int64_t>(clock.toNs(tsc) - truth.monoAt(tsc));
}

TEST(TscClockTest, AnswersNothingUntilTwoReadingsSpanEnoughTime) {
  TscClock clock;
  FakeTimeline truth;
  EXPECT_FALSE(clock.calibrated());
  EXPECT_EQ(clock.toNs(truth.tscAt(6'000'000'000)), 0u);
  clock.steer(truth.readingAt(6'000'000'000), kPeriodNs);
  EXPECT_EQ(clock.toNs(truth.tscAt(6'000'000'000)), 0u);
  clock.steer(truth.readingAt(6'010'000'000), kPeriodNs);  // 10 ms: too short to measure a rate
  EXPECT_FALSE(clock.calibrated());
  clock.steer(truth.readingAt(6'200'000'000), kPeriodNs);
  EXPECT_TRUE(clock.calibrated());
  EXPECT_EQ(clock.toNs(truth.tscAt(6'200'000'000)), truth.monoAt(truth.tscAt(6'200'000'000)));
}

TEST(TscClockTest, ConvertsALinearClockToTheNanosecond) {
  TscClock clock;
  FakeTimeline truth;
  clock.steer(truth.readingAt(6'000'000'000), kPeriodNs);
  clock.steer(truth.readingAt(6'200'000'000), kPeriodNs);
  for (uint64_t ns = 6'200'000'000; ns < 6'400'000'000; ns += 7'777'777)
    EXPECT_LE(std::abs(errorAt(clock, truth, truth.tscAt(ns))), 1) << ns;
}

TEST(TscClockTest, FollowsARateChangeWithoutEverJumping) {
  TscClock clock;
  FakeTimeline truth;
  uint64_t now = 6'000'000'000;
  for (int i = 0; i < 5; ++i, now += kPeriodNs) clock.steer(truth.readingAt(now), kPeriodNs);
  truth.changeRate(now, 0.4 * (1 + 100e-6));  // NTP slews by 100 ppm
  int64_t worst_early = 0, worst_late = 0;
  for (int i = 0; i < 60; ++i, now += kPeriodNs) {
    const uint64_t tsc = truth.tscAt(now);
    const uint64_t before = clock.toNs(tsc);
    clock.steer({tsc, truth.monoAt(tsc)}, kPeriodNs);
    // Continuous at the steer: the same instant reads the same before and after it.
    ASSERT_LE(std::llabs(static_cast<int64_t>(clock.toNs(tsc) - before)), 1) << "steer " << i;
    for (uint64_t ns = now; ns < now + kPeriodNs; ns += kPeriodNs / 8) {
      const int64_t error = std::abs(errorAt(clock, truth, truth.tscAt(ns)));
      (i < 40 ? worst_early : worst_late) = std::max(i < 40 ? worst_early : worst_late, error);
    }
  }
  // While the rate is still measured across the change: at most one period's drift at
  // 100 ppm (20 us), steered away within the next period.
  EXPECT_LE(worst_early, 40'000);
  // Once the rate anchor is past the change: the nanoseconds of rounding.
  EXPECT_LE(worst_late, 100);
}

TEST(TscClockTest, JumpsToTheTrueClockAfterALargeStep) {
  TscClock clock;
  FakeTimeline truth;
  clock.steer(truth.readingAt(6'000'000'000), kPeriodNs);
  clock.steer(truth.readingAt(6'200'000'000), kPeriodNs);
  truth.origin_ns += 5'000'000;  // the clock stepped 5 ms ahead of the TSC
  const uint64_t tsc = truth.tscAt(6'400'000'000);
  ASSERT_GT(std::abs(errorAt(clock, truth, tsc)), TscClock::kMaxSlewNs);
  clock.steer({tsc, truth.monoAt(tsc)}, kPeriodNs);
  EXPECT_EQ(clock.toNs(tsc), truth.monoAt(tsc));
}

TEST(TscClockTest, AStaleOrEarlierReadingFallsBack) {
  TscClock clock;
  FakeTimeline truth;
  clock.steer(truth.readingAt(6'000'000'000), kPeriodNs);
  clock.steer(truth.readingAt(6'200'000'000), kPeriodNs);
  EXPECT_NE(clock.toNs(truth.tscAt(6'200'000'000 + 999'000'000)), 0u);
  EXPECT_EQ(clock.toNs(truth.tscAt(6'200'000'000 + 1'001'000'000)), 0u);  // nobody steered for a second
  EXPECT_EQ(clock.toNs(truth.tscAt(6'199'000'000)), 0u);  // before the base: another CPU's TSC behind
}

// A writer republishes while a reader converts: the reader sees a whole conversion or none.
// (Without the sequence check this fails about one run in five on the 2-core dev VM.)
TEST(TscClockTest, ReadersNeverSeeAHalfWrittenConversion) {
  TscClock clock;
  FakeTimeline truth;
  clock.steer(truth.readingAt(6'000'000'000), kPeriodNs);
  clock.steer(truth.readingAt(6'200'000'000), kPeriodNs);
  std::atomic<uint64_t> writer_ns{0};
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (uint64_t ns = 6'200'000'000; !stop.load(std::memory_order_relaxed); ns += 1'000'000) {
      // alternately 3 ms off either way, so every republish changes every field
      const int64_t off = (ns / 1'000'000) % 2 == 0 ? 3'000'000 : -3'000'000;
      const uint64_t tsc = truth.tscAt(ns);
      clock.steer({tsc, truth.monoAt(tsc) + static_cast<uint64_t>(off)}, kPeriodNs);
      writer_ns.store(ns, std::memory_order_release);
    }
  });
  uint64_t checked = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (checked < 300'000 && std::chrono::steady_clock::now() < deadline) {
    const uint64_t ns = writer_ns.load(std::memory_order_acquire);
    if (ns == 0) continue;
    const uint64_t tsc = truth.tscAt(ns);
    const uint64_t got = clock.toNs(tsc);
    if (got == 0) continue;  // republished since: this instant is before the new base
    ++checked;
    // Whole conversions put this instant exactly 3 ms off; halves of two, 2 or 4 ms.
    const int64_t off = std::llabs(static_cast<int64_t>(got - truth.monoAt(tsc)));
    if (std::llabs(off - 3'000'000) > 300'000) {
      stop = true;
      writer.join();
      FAIL() << "a torn conversion: " << off << " ns off";
    }
  }
  stop = true;
  writer.join();
  EXPECT_GT(checked, 0u);
}

uint64_t clockMonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

// The real thing on this machine: once steered, nowNs() reads the TSC and agrees with
// CLOCK_MONOTONIC.
TEST(TscClockTest, TheProcessClockAgreesWithClockMonotonic) {
  if (!steerProcessTscClock(kPeriodNs)) GTEST_SKIP() << "this kernel does not keep time by the TSC";
  for (int i = 0; i < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
    steerProcessTscClock(kPeriodNs);
  }
  int64_t worst = 0;
  for (int i = 0; i < 10'000; ++i) {
    const uint64_t before = clockMonotonicNs(), ours = nowNs(), after = clockMonotonicNs();
    if (after - before > 2'000) continue;  // preempted between the reads
    const int64_t outside = ours < before ? static_cast<int64_t>(before - ours)
                            : ours > after ? static_cast<int64_t>(ours - after) : 0;
    worst = std::max(worst, outside);
  }
  RecordProperty("worst_ns_outside", static_cast<int>(worst));
  EXPECT_LE(worst, 2'000) << "ns outside the CLOCK_MONOTONIC reads around it";
}

}  // namespace
}  // namespace commtrace
