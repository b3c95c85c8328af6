#include "tools/report/analyses/live_hangs.h"

#include <gtest/gtest.h>

#include "tools/report/evidence_words.h"

namespace commtrace::report {
namespace {

constexpr uint64_t kSecond = 1'000'000'000;
constexpr uint64_t kT0 = 1'760'000'000 * kSecond;  // UTC; the processes' CPU clocks read UTC here
constexpr uint64_t kWorld = 0xA11, kPipe = 0xB22;

// Four processes (global ranks 0-3) in `world` and `pipe`, fed batch by batch as a follower would.
class HangsTest : public ::testing::Test {
 protected:
  HangsTest() {
    for (int r = 0; r < 4; ++r) run_.processes.push_back(ProcessInfo{.host = "node0", .rank = r});
    hangs_ = std::make_unique<LiveHangs>(run_, LiveHangs::Options{}, [this](const HangAlert& a) {
      alerts_.push_back(a);
      lines_.push_back(hangLine(run_, a));
    });
    for (int r = 0; r < 4; ++r) {
      RecordBatch b = batch(r, kT0);
      b.comm_infos.push_back({kWorld, run_.names.intern("world"), 4, r, r, 1});
      b.comm_infos.push_back({kPipe, run_.names.intern("pipe"), 4, r, r, 1});
      hangs_->observe(b);
    }
  }

  RecordBatch batch(int process, uint64_t heartbeat_utc_ns) {
    RecordBatch b;
    b.process = process;
    b.heartbeat_utc_ns = heartbeat_utc_ns;
    return b;
  }
  CollRow allReduce(uint64_t seq, uint64_t start_utc_ns) {
    CollRow r{.comm_id = kWorld, .seq = seq, .op_index = seq, .func = run_.names.intern("AllReduce")};
    r.view.cpu_start_ns = start_utc_ns;
    return r;
  }
  InFlightRow stuckIn(uint64_t seq, uint64_t start_utc_ns, uint64_t seen_utc_ns) {
    return {kWorld, seq, seq, start_utc_ns, seen_utc_ns, run_.names.intern("AllReduce"), -1, 1};
  }
  // Every rank completes AllReduce #0..#n-1, one a second from kT0.
  void completeSteps(uint64_t n) {
    for (int r = 0; r < 4; ++r) {
      RecordBatch b = batch(r, kT0 + n * kSecond);
      for (uint64_t s = 0; s < n; ++s) b.colls.push_back(allReduce(s, kT0 + s * kSecond));
      hangs_->observe(b);
    }
  }
  // Ranks `waiting` report AllReduce #seq in flight since `start`; the others only beat.
  void reportAt(uint64_t now, uint64_t seq, uint64_t start, std::initializer_list<int> waiting, bool others_beat = true) {
    for (int r = 0; r < 4; ++r) {
      const bool waits = std::find(waiting.begin(), waiting.end(), r) != waiting.end();
      if (!waits && !others_beat) continue;
      RecordBatch b = batch(r, now);
      if (waits) b.in_flight.push_back(stuckIn(seq, start, now));
      hangs_->observe(b);
    }
  }

  RunModel run_;
  std::unique_ptr<LiveHangs> hangs_;
  std::vector<HangAlert> alerts_;
  std::vector<std::string> lines_;
};

TEST_F(HangsTest, ARankThatStopsIssuingOpsIsNamedOnceTheOthersWaitedFiveSeconds) {
  completeSteps(50);
  const uint64_t stall = kT0 + 50 * kSecond;
  for (uint64_t s = 1; s <= 6; ++s) {
    reportAt(stall + s * kSecond, 50, stall, {0, 1, 3});
    hangs_->advance(stall + s * kSecond + kSecond / 10);
    EXPECT_EQ(alerts_.size(), s < 5 ? 0u : 1u) << "after " << s << " s";
  }
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_EQ(lines_[0], "commtrace: HANG AllReduce #50 on world: ranks 0,1,3 waiting 5.1 s; rank 2 last seen at AllReduce #49");
  const HangAlert& a = alerts_[0];
  EXPECT_EQ(a.since_utc_ns, stall);
  ASSERT_EQ(a.others.size(), 1u);
  EXPECT_FALSE(a.others[0].stuck);
  EXPECT_EQ(a.others[0].silent_s, 0) << "rank 2's file still beats: it is alive, just not calling NCCL";
  ASSERT_EQ(hangs_->hanging().size(), 1u);

  // Rank 2 arrives: every rank completes #50, and the waiting ends.
  for (int r = 0; r < 4; ++r) {
    RecordBatch b = batch(r, stall + 9 * kSecond);
    b.colls.push_back(allReduce(50, r == 2 ? stall + 8 * kSecond : stall));
    hangs_->observe(b);
  }
  hangs_->advance(stall + 9 * kSecond);
  ASSERT_EQ(lines_.size(), 2u);
  EXPECT_EQ(lines_[1], "commtrace: RECOVERED AllReduce #50 on world went on after 9.0 s");
  EXPECT_TRUE(hangs_->hanging().empty());
}

TEST_F(HangsTest, ASilentFileIsSaidToBelongToAProcessGoneOrFrozen) {
  completeSteps(10);
  const uint64_t stall = kT0 + 10 * kSecond;
  for (uint64_t s = 1; s <= 6; ++s) reportAt(stall + s * kSecond, 10, stall, {0, 1, 2}, /*others_beat=*/false);
  hangs_->advance(stall + 6 * kSecond);
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_EQ(lines_[0], "commtrace: HANG AllReduce #10 on world: ranks 0-2 waiting 6.0 s; rank 3 last seen at AllReduce #9, "
                       "its file silent 6.0 s (process gone or frozen)");
}

TEST_F(HangsTest, EveryMemberWaitingMeansTheGpuOrNetworkStalls) {
  completeSteps(3);
  const uint64_t stall = kT0 + 3 * kSecond;
  for (uint64_t s = 1; s <= 5; ++s) reportAt(stall + s * kSecond, 3, stall, {0, 1, 2, 3});
  hangs_->advance(stall + 5 * kSecond);
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_EQ(lines_[0], "commtrace: HANG AllReduce #3 on world: ranks 0-3 waiting 5.0 s (every member is in it: a GPU or the "
                       "network does not progress)");
}

TEST_F(HangsTest, AStuckSendNamesItsPeerOnly) {
  const NameId send = run_.names.intern("Send");
  for (uint64_t s = 1; s <= 6; ++s) {
    RecordBatch b = batch(0, kT0 + s * kSecond);
    b.in_flight.push_back({kPipe, 7, 0, kT0, kT0 + s * kSecond, send, 1, 1});
    hangs_->observe(b);
  }
  hangs_->advance(kT0 + 6 * kSecond);
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_EQ(lines_[0], "commtrace: HANG Send #7 to 1 on pipe: rank 0 waiting 6.0 s; rank 1 never seen in an op of it, its file "
                       "silent 6.0 s (process gone or frozen)");
  // The flusher's clearing report ends it.
  RecordBatch b = batch(0, kT0 + 7 * kSecond);
  b.in_flight.push_back({kPipe, 0, 0, 0, kT0 + 7 * kSecond, 0, -1, 0});
  hangs_->observe(b);
  hangs_->advance(kT0 + 7 * kSecond);
  ASSERT_EQ(lines_.size(), 2u);
  EXPECT_EQ(alerts_[1].kind, HangAlert::Kind::kRecovered);
}

// A job terminated during a hang: the waiters' processes end (close their files) still in
// the op. That is no recovery: the HANG stays the last line (a RECOVERED "went on after
// 6.6 s" was printed).
TEST_F(HangsTest, AJobEndedDuringAHangIsNoRecovery) {
  completeSteps(5);
  const uint64_t stall = kT0 + 5 * kSecond;
  for (uint64_t s = 1; s <= 6; ++s) reportAt(stall + s * kSecond, 5, stall, {0, 1, 3});
  hangs_->advance(stall + 6 * kSecond);
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_EQ(alerts_[0].kind, HangAlert::Kind::kHang);
  for (int r = 0; r < 4; ++r) {
    RecordBatch b = batch(r, stall + 7 * kSecond);
    b.closed = true;
    hangs_->observe(b);
  }
  hangs_->advance(stall + 8 * kSecond);
  EXPECT_EQ(lines_.size(), 1u) << lines_.back();
}

// After a stall of the whole machine the waiters' reports of AllReduce #5 arrive late,
// while rank 2's file already shows it past #5: a HANG naming rank 2 "last seen" ahead of
// the op the others wait in contradicts itself, and is not printed.
TEST_F(HangsTest, AHangWhoseMissingMemberIsAheadOfItIsNotPrinted) {
  completeSteps(5);
  const uint64_t stall = kT0 + 5 * kSecond;
  RecordBatch ahead = batch(2, stall + 20 * kSecond);
  for (uint64_t s = 5; s < 9; ++s) ahead.colls.push_back(allReduce(s, stall + (s - 4) * kSecond));
  hangs_->observe(ahead);
  for (uint64_t s = 1; s <= 12; ++s) reportAt(stall + s * kSecond, 5, stall, {0, 1, 3}, /*others_beat=*/false);
  hangs_->advance(stall + 12 * kSecond);
  EXPECT_TRUE(lines_.empty()) << lines_[0];
}

TEST_F(HangsTest, ReportsOverTakenByTheirCompletionOrByTheProcessEndingAlertNobody) {
  completeSteps(5);
  const uint64_t stall = kT0 + 5 * kSecond;
  // Rank 0's report of #5 reached the chunk that also holds #5's completion.
  RecordBatch b = batch(0, stall + kSecond);
  b.colls.push_back(allReduce(5, stall));
  b.in_flight.push_back(stuckIn(5, stall, stall + kSecond));
  hangs_->observe(b);
  // Rank 1 was waiting when its process ended (closed its file).
  b = batch(1, stall + kSecond);
  b.in_flight.push_back(stuckIn(5, stall, stall + kSecond));
  hangs_->observe(b);
  b = batch(1, stall + 2 * kSecond);
  b.closed = true;
  hangs_->observe(b);
  hangs_->advance(stall + 60 * kSecond);
  EXPECT_TRUE(lines_.empty()) << lines_[0];
}

TEST_F(HangsTest, WaitsShorterThanTheThresholdNeverAlert) {
  completeSteps(1);
  // 200 ops each waited in for 3 s (a slow spell), each report cleared by the op's completion.
  for (uint64_t op = 1; op <= 200; ++op) {
    const uint64_t start = kT0 + op * 4 * kSecond;
    reportAt(start + 2 * kSecond, op, start, {0, 1});
    hangs_->advance(start + 2 * kSecond);
    for (int r = 0; r < 4; ++r) {
      RecordBatch b = batch(r, start + 3 * kSecond);
      b.colls.push_back(allReduce(op, start));
      hangs_->observe(b);
    }
    hangs_->advance(start + 3 * kSecond);
  }
  EXPECT_TRUE(lines_.empty()) << lines_[0];
}

}  // namespace
}  // namespace commtrace::report
