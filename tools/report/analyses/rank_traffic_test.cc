// Traffic per rank: every seat of every collective and both sides of every transfer counted
// for their rank, checked against a recount of random runs; a restarted rank's processes
// summed; shards merged equal to the whole; the uneven rank named by its bytes.
#include "tools/report/analyses/rank_traffic.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace commtrace::report {
namespace {

MemberView seat(int32_t process) {
  MemberView m;
  m.process = process;
  return m;
}

RunModel runOf(const std::vector<int>& ranks) {
  RunModel run;
  for (int rank : ranks) run.processes.push_back({.host = "node" + std::to_string(rank / 4), .rank = rank});
  return run;
}

const RankTrafficRow* rowOf(const std::vector<RankTrafficRow>& rows, int rank) {
  for (const RankTrafficRow& r : rows)
    if (r.rank == rank) return &r;
  return nullptr;
}

// Random collectives and transfers among 8 processes (one unrecorded seat in some), against
// sums made by hand per rank.
TEST(RankTraffic, EverySeatAndSideCountsForItsRank) {
  std::mt19937 random(7);
  for (int round = 0; round < 20; ++round) {
    const RunModel run = runOf({0, 1, 2, 3, 4, 5, 6, 7});
    RankTrafficTally tally;
    std::map<int, RankTrafficRow> expected;
    for (int op = 0; op < 200; ++op) {
      const uint64_t bytes = 1u << (random() % 20);
      if (random() % 2 == 0) {
        std::vector<MemberView> members;
        const int size = 2 + static_cast<int>(random() % 7);
        for (int r = 0; r < size; ++r) {
          const int32_t process = random() % 10 == 0 ? -1 : r;  // a seat nobody recorded
          members.push_back(seat(process));
          if (process < 0) continue;
          expected[r].collectives++, expected[r].coll_bytes += bytes;
        }
        tally.collective({.bytes = bytes}, members);
      } else {
        const int32_t from = static_cast<int32_t>(random() % 8), to = static_cast<int32_t>(random() % 8);
        tally.transfer({.bytes = bytes, .send = seat(from), .recv = seat(to)});
        expected[from].sends++, expected[from].sent_bytes += bytes;
        expected[to].receives++, expected[to].received_bytes += bytes;
      }
    }
    const std::vector<RankTrafficRow> rows = rankTraffic(run, tally);
    ASSERT_EQ(rows.size(), expected.size());
    for (const auto& [rank, want] : expected) {
      const RankTrafficRow* got = rowOf(rows, rank);
      ASSERT_NE(got, nullptr) << rank;
      EXPECT_EQ(got->host, "node" + std::to_string(rank / 4));
      EXPECT_EQ(got->collectives, want.collectives);
      EXPECT_EQ(got->coll_bytes, want.coll_bytes);
      EXPECT_EQ(got->sends, want.sends);
      EXPECT_EQ(got->sent_bytes, want.sent_bytes);
      EXPECT_EQ(got->receives, want.receives);
      EXPECT_EQ(got->received_bytes, want.received_bytes);
    }
    for (size_t i = 1; i < rows.size(); ++i)
      EXPECT_GE(rows[i - 1].coll_bytes + rows[i - 1].sent_bytes, rows[i].coll_bytes + rows[i].sent_bytes) << "most bytes first";
  }
}

// Processes 0 and 2 are rank 0 before and after a restart; process 3 never learnt its rank.
TEST(RankTraffic, ARestartedRanksProcessesAreOneRowAndUnknownRanksNone) {
  const RunModel run = runOf({0, 1, 0, -1});
  RankTrafficTally tally;
  tally.transfer({.bytes = 100, .send = seat(0), .recv = seat(1)});
  tally.transfer({.bytes = 300, .send = seat(2), .recv = seat(3)});
  const std::vector<RankTrafficRow> rows = rankTraffic(run, tally);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].rank, 0);
  EXPECT_EQ(rows[0].sends, 2u);
  EXPECT_EQ(rows[0].sent_bytes, 400u);
  EXPECT_EQ(rows[1].rank, 1);
}

// Three ranks send 100 bytes, one 300: it carries three times the median rank's traffic.
TEST(RankTraffic, TheUnevenRankStandsOutAgainstTheMedian) {
  const RunModel run = runOf({0, 1, 2, 3});
  RankTrafficTally tally;
  for (int32_t p = 0; p < 4; ++p) tally.transfer({.bytes = p == 2 ? 300u : 100u, .send = seat(p), .recv = seat((p + 1) % 4)});
  const std::vector<RankTrafficRow> rows = rankTraffic(run, tally);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].rank, 2);
  EXPECT_DOUBLE_EQ(rows[0].bytes_vs_median, 3.0);
  EXPECT_DOUBLE_EQ(rows[3].bytes_vs_median, 1.0);
}

TEST(RankTraffic, ShardsMergedEqualTheWhole) {
  const RunModel run = runOf({0, 1, 2, 3});
  RankTrafficTally whole, shards[2];
  for (int i = 0; i < 40; ++i) {
    const P2pTransfer t{.bytes = static_cast<uint64_t>(i + 1), .send = seat(i % 4), .recv = seat((i + 1) % 4)};
    whole.transfer(t);
    shards[i % 2].transfer(t);
  }
  shards[0].merge(shards[1]);
  EXPECT_EQ(whole.byProcess(), shards[0].byProcess());
}

}  // namespace
}  // namespace commtrace::report
