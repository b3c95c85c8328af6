#include "tools/report/load/phase_path_tally.h"

#include <gtest/gtest.h>

#include <map>

namespace commtrace::report {
namespace {

// finish()'s rows as path -> (ops, bytes, gpu_ns), names from a pool of its own.
std::map<std::string, std::tuple<uint64_t, uint64_t, uint64_t>> rowsOf(const PhasePathTally& tally) {
  NamePool pool;
  std::map<std::string, std::tuple<uint64_t, uint64_t, uint64_t>> rows;
  for (const PathComm& p : tally.finish([&](std::string_view s) { return pool.intern(s); }))
    rows[std::string(pool[p.path])] = {p.ops, p.bytes, p.gpu_ns};
  return rows;
}

TEST(PhasePathTally, OpsAreTalliedByTheirPathNamedFromTheTopDown) {
  PhasePathTally tally;
  tally.define(1, 0, "train_step #");
  tally.define(2, 1, "forward");
  tally.define(3, 2, "layers.0");
  tally.define(7, 1, "forward");   // another thread met the same path apart: its rows join
  tally.addOp(3, 100, 1000, 1010);
  tally.addOp(3, 100, 2000, 2030);
  tally.addOp(2, 8, 3000, 3001);
  tally.addOp(7, 8, 4000, 4002);
  tally.addOp(0, 5, 5000, 5004);  // outside any range
  tally.addOp(99, 1, 6000, 6001);  // its node never arrived
  const auto rows = rowsOf(tally);
  EXPECT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows.at("train_step # / forward / layers.0"), std::make_tuple(2u, 200u, 40u));
  EXPECT_EQ(rows.at("train_step # / forward"), std::make_tuple(2u, 16u, 3u));
  EXPECT_EQ(rows.at(std::string(PhasePathTally::kNoPath)), std::make_tuple(1u, 5u, 4u));
  EXPECT_EQ(rows.at(std::string(PhasePathTally::kUnknownPath)), std::make_tuple(1u, 1u, 1u));
}

// The 2(n-1) pieces of one AlltoAll carry their kernel's one interval: their path counts it
// once, as it counts once the time two of its ops ran at once; an op before the stretch
// counted, or apart from it, counts whole; another path counts its own.
TEST(PhasePathTally, TimeAPathsOpsShareIsCountedOnce) {
  PhasePathTally tally;
  tally.define(1, 0, "shard_exchange");
  tally.define(2, 0, "loss_scale");
  for (int piece = 0; piece < 6; ++piece) tally.addOp(1, 64, 10'000, 15'000);
  tally.addOp(1, 64, 14'000, 17'000);  // overlaps the last 1,000 ns
  tally.addOp(1, 64, 9'000, 10'500);   // reaches before: 1,000 ns new
  tally.addOp(1, 64, 2'000, 3'000);    // entirely before
  tally.addOp(2, 4, 10'000, 15'000);   // the same time on another path
  tally.addOp(2, 4, 0, 0);             // no GPU times
  const auto rows = rowsOf(tally);
  EXPECT_EQ(rows.at("shard_exchange"), std::make_tuple(9u, 9u * 64, 5'000u + 2'000 + 1'000 + 1'000));
  EXPECT_EQ(rows.at("loss_scale"), std::make_tuple(2u, 8u, 5'000u));
}

TEST(PhasePathTally, NoRowsWhenNoOpRanUnderARange) {
  PhasePathTally tally;
  tally.define(1, 0, "idle");
  tally.addOp(0, 5, 5000, 5004);
  EXPECT_TRUE(rowsOf(tally).empty());
}

// A file naming more paths than a program has (damaged, hostile) holds the tally to its cap:
// the ops past it are counted, under the unknown path.
TEST(PhasePathTally, PathsPastTheCapAreCountedAsUnknown) {
  PhasePathTally tally;
  for (uint32_t id = 1; id <= PhasePathTally::kMaxPaths + 10; ++id) {
    tally.define(id, 0, "n");
    tally.addOp(id, 1, 0, 0);
  }
  const auto rows = rowsOf(tally);
  EXPECT_EQ(std::get<0>(rows.at("n")), PhasePathTally::kMaxPaths);
  EXPECT_EQ(std::get<0>(rows.at(std::string(PhasePathTally::kUnknownPath))), 10u);
}

// ranges() splits what finish() joins, an empty range kept where the name had one.
TEST(PhasePathTally, RangesSplitAPathAsItWasJoined) {
  using V = std::vector<std::string_view>;
  EXPECT_EQ(PhasePathTally::ranges("train_step # / backward / layers.3"), (V{"train_step #", "backward", "layers.3"}));
  EXPECT_EQ(PhasePathTally::ranges("top"), (V{"top"}));
  EXPECT_EQ(PhasePathTally::ranges("a/b /  / c"), (V{"a/b", "", "c"}));
}

// A damaged file's nodes may point at each other: the walk ends, the report is made.
TEST(PhasePathTally, ACycleOfNodesEndsTheWalk) {
  PhasePathTally tally;
  tally.define(1, 2, "a");
  tally.define(2, 1, "b");
  tally.addOp(1, 1, 1000, 1001);
  const auto rows = rowsOf(tally);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows.begin()->first.substr(0, 5), "b / a");
}

}  // namespace
}  // namespace commtrace::report
