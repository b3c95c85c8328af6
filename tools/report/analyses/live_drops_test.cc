// Drop alerts: a process whose lost-record count rises is DROPS once per episode, from the
// chunk that showed it, with what it lost; RECOVERED once its file has gone on quiet_after
// without a loss; a process that never loses anything, or whose count only repeats, is quiet.
#include "tools/report/analyses/live_drops.h"

#include <gtest/gtest.h>

#include <vector>

namespace commtrace::report {
namespace {

constexpr uint64_t kT0 = 1'790'000'000'000'000'000ull, kSecond = 1'000'000'000;

RecordBatch chunk(int process, uint64_t at_s, uint64_t dropped) {
  return {.process = process, .position_ns = kT0 + at_s * kSecond, .dropped_records = dropped};
}

TEST(LiveDrops, ARisingCountIsOneAlertPerEpisodeAndRecoversOnceQuiet) {
  std::vector<DropAlert> alerts;
  LiveDrops drops({.quiet_after_ns = 10 * kSecond}, [&](const DropAlert& a) { alerts.push_back(a); });
  drops.observe(chunk(0, 1, 0));
  drops.observe(chunk(1, 1, 0));
  drops.judge();
  EXPECT_TRUE(alerts.empty()) << "nothing lost";
  drops.observe(chunk(1, 2, 40));
  drops.judge();
  ASSERT_EQ(alerts.size(), 1u);
  EXPECT_EQ(alerts[0].kind, DropAlert::Kind::kDrops);
  EXPECT_EQ(alerts[0].process, 1);
  EXPECT_EQ(alerts[0].since_utc_ns, kT0 + 2 * kSecond);
  EXPECT_EQ(alerts[0].lost, 40u);
  drops.observe(chunk(1, 3, 100));  // the same episode goes on: no second alert
  drops.observe(chunk(0, 3, 0));
  drops.judge();
  EXPECT_EQ(alerts.size(), 1u);
  drops.observe(chunk(1, 12, 100));  // 9 s without a loss: not yet
  drops.judge();
  EXPECT_EQ(alerts.size(), 1u);
  drops.observe(chunk(1, 13, 100));
  drops.judge();
  ASSERT_EQ(alerts.size(), 2u);
  EXPECT_EQ(alerts[1].kind, DropAlert::Kind::kRecovered);
  EXPECT_EQ(alerts[1].since_utc_ns, kT0 + 3 * kSecond) << "the last chunk that showed a loss";
  EXPECT_EQ(alerts[1].lost, 100u);
  drops.observe(chunk(1, 20, 130));  // a second episode
  drops.judge();
  ASSERT_EQ(alerts.size(), 3u);
  EXPECT_EQ(alerts[2].kind, DropAlert::Kind::kDrops);
  EXPECT_EQ(alerts[2].lost, 30u) << "this episode's";
  EXPECT_EQ(alerts[2].lost_total, 130u);
  EXPECT_EQ(drops.lostSoFar().size(), 1u) << "only the process that lost any";
  EXPECT_EQ(drops.lostSoFar().at(1), 130u);
}

}  // namespace
}  // namespace commtrace::report
