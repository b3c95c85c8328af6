// A run read in shards (report --shard I/N --state F), the states merged (commtrace merge):
// the same report as the run read whole, but for the root-cause walk's figures, which the
// cuts between shards move a little (docs/report.md, "Shards"). Checked on random layouts
// with and without a planted straggler, and every way the merge must refuse states.
#include "tools/report/shard/shard_state.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/temp_dir.h"
#include "tests/support/walk_figures.h"
#include "tools/report/load/run_loader.h"
#include "tools/report/output/json_report.h"
#include "tools/synthetic/run_writer.h"

namespace commtrace::report {
namespace {

using nlohmann::json;

LoadOptions reportLoad(const std::string& dir, StreamedAnalyses& streamed, ShardSpec shard = {}) {
  return {.paths = {dir}, .stream = &streamed, .keep_ops = false, .keep_all_phases = false, .keep_compute = false, .shard = shard};
}

std::string wholeJson(const std::string& dir) {
  RunModel run;
  StreamedAnalyses streamed;
  std::ostringstream err, out;
  EXPECT_TRUE(loadRun(reportLoad(dir, streamed), run, err)) << err.str();
  writeJson(buildReport(run, alignClocks(run, streamed.anchors), {}, streamed), out);
  return out.str();
}

std::vector<std::string> shardStates(const std::string& dir, int shards) {
  std::vector<std::string> states;
  for (int s = 0; s < shards; ++s) {
    RunModel run;
    StreamedAnalyses streamed;
    std::ostringstream err, state;
    streamed.gateCallPieces(run);
    EXPECT_TRUE(loadRun(reportLoad(dir, streamed, {.shard = s, .shards = shards}), run, err)) << err.str();
    EXPECT_TRUE(writeShardState(state, run, streamed, "", err)) << err.str();
    states.push_back(state.str());
  }
  return states;
}

std::vector<ShardSource> sourcesOf(const std::vector<std::string>& states) {
  std::vector<ShardSource> sources;
  for (size_t i = 0; i < states.size(); ++i) sources.push_back(shardBuffer("state " + std::to_string(i), states[i]));
  return sources;
}

// names_before: names interned into the merged pool first, so that every id of the states
// must be remapped.
std::string mergedJson(const std::vector<ShardSource>& sources, const std::vector<std::string>& names_before = {}) {
  auto merged = std::make_unique<MergedRun>();
  for (const std::string& name : names_before) merged->run.names.intern(name);
  std::ostringstream err, out;
  EXPECT_TRUE(mergeShardStates(sources, *merged, err)) << err.str();
  writeJson(buildReport(merged->run, alignClocks(merged->run, merged->analyses.anchors), {}, merged->analyses), out);
  return out.str();
}

double waitCausedBy(const std::string& report, int rank) {
  const json r = json::parse(report);
  for (const json& row : r["stragglers"])
    if (row["rank"].get<int>() == rank) return row["wait_caused_us"].get<double>();
  return -1;
}

synthetic::SyntheticRunOptions randomRun(std::mt19937& rng, const std::string& dir, bool straggler) {
  synthetic::SyntheticRunOptions o;
  o.dir = dir;
  o.shape = rng() % 3 == 0 ? synthetic::JobShape::kDdp : synthetic::JobShape::kMixed;
  o.ranks_per_node = 2 << (rng() % 3);  // 2, 4, 8
  o.ranks = o.ranks_per_node * static_cast<int>(2 + rng() % 4);
  o.collectives_per_rank = 400 + rng() % 800;
  o.straggler_rank = straggler ? static_cast<int>(rng() % static_cast<unsigned>(o.ranks)) : -1;
  o.kernels_per_collective = rng() % 2;
  return o;
}

void writeRun(const synthetic::SyntheticRunOptions& o) {
  synthetic::SyntheticRunTruth truth;
  std::string error;
  ASSERT_TRUE(synthetic::writeSyntheticRun(o, truth, error)) << error;
}

TEST(ShardState, OneShardIsTheWholeRunToTheByte) {
  testutil::TempDir dir;
  writeRun({.dir = dir.path() + "/run", .ranks = 16, .collectives_per_rank = 1500});
  EXPECT_EQ(mergedJson(sourcesOf(shardStates(dir.path() + "/run", 1))), wholeJson(dir.path() + "/run"));
}

// Random layouts (mixed or DDP, 2 to 8 ranks a node, 4 to 40 ranks, CUPTI or not), each with
// a straggler planted on a random rank and as its healthy twin: merged from 2 and 4 shards,
// everything but the walk's figures is the whole run's, the flagged ranks are the same (the
// straggler; none in the twin), and the straggler's waiting caused is within 2 %.
TEST(ShardState, ShardsMergedAreTheWholeRunButForTheWalksFigures) {
  std::mt19937 rng(20261202);
  for (int trial = 0; trial < 3; ++trial)
    for (const bool straggler : {true, false}) {
      testutil::TempDir dir;
      const synthetic::SyntheticRunOptions o = randomRun(rng, dir.path() + "/run", straggler);
      writeRun(o);
      const std::string trace = "trial " + std::to_string(trial) + (straggler ? " straggler " : " healthy ") + "ranks " +
                                std::to_string(o.ranks) + " per node " + std::to_string(o.ranks_per_node);
      const std::string whole = wholeJson(o.dir);
      const std::vector<int> flagged = testutil::flaggedStragglers(whole);
      EXPECT_EQ(flagged, straggler ? std::vector<int>{o.straggler_rank} : std::vector<int>{}) << trace;
      for (const int shards : {2, 4}) {
        const std::string merged = mergedJson(sourcesOf(shardStates(o.dir, shards)));
        EXPECT_EQ(testutil::shardsOf(merged), shards);
        EXPECT_EQ(testutil::shardsOf(whole), 1);
        const json patch = json::diff(testutil::withoutWalkFigures(whole), testutil::withoutWalkFigures(merged));
        EXPECT_TRUE(patch.empty()) << trace << " shards " << shards << ": " << patch.dump().substr(0, 3000);
        EXPECT_EQ(testutil::flaggedStragglers(merged), flagged) << trace << " shards " << shards;
        if (!flagged.empty()) {
          const double caused = waitCausedBy(whole, flagged[0]);
          EXPECT_NEAR(waitCausedBy(merged, flagged[0]), caused, 0.02 * caused) << trace << " shards " << shards;
        }
      }
    }
}

// Each shard interns names in its own order: merged into a pool that already holds other
// names, every id is another, and the report is the same.
TEST(ShardState, NamesAreRemappedIntoThePoolMergedInto) {
  testutil::TempDir dir;
  writeRun({.dir = dir.path() + "/run", .ranks = 16, .collectives_per_rank = 600, .kernels_per_collective = 1});
  const std::vector<std::string> states = shardStates(dir.path() + "/run", 2);
  EXPECT_EQ(mergedJson(sourcesOf(states), {"a name first", "another", "ncclDevKernel_unused"}), mergedJson(sourcesOf(states)));
}

// Given in any order, the states merge in shard order: the same report to the byte.
TEST(ShardState, TheOrderTheStatesAreGivenInDoesNotMatter) {
  testutil::TempDir dir;
  writeRun({.dir = dir.path() + "/run", .ranks = 16, .collectives_per_rank = 600});
  std::vector<std::string> states = shardStates(dir.path() + "/run", 3);
  const std::string in_order = mergedJson(sourcesOf(states));
  std::swap(states[0], states[2]);
  EXPECT_EQ(mergedJson(sourcesOf(states)), in_order);
}

// More shards than the reference process has ops: the empty shards add nothing.
TEST(ShardState, MoreShardsThanOpsStillAddUp) {
  testutil::TempDir dir;
  writeRun({.dir = dir.path() + "/run", .ranks = 8, .collectives_per_rank = 3});
  EXPECT_EQ(testutil::withoutWalkFigures(mergedJson(sourcesOf(shardStates(dir.path() + "/run", 8)))), testutil::withoutWalkFigures(wholeJson(dir.path() + "/run")));
}

std::string mergeError(const std::vector<ShardSource>& sources) {
  MergedRun merged;
  std::ostringstream err;
  EXPECT_FALSE(mergeShardStates(sources, merged, err));
  return err.str();
}

TEST(ShardState, StatesThatAreNotEveryShardOfOneRunOnceAreRefused) {
  testutil::TempDir dir;
  writeRun({.dir = dir.path() + "/a", .ranks = 8, .collectives_per_rank = 100});
  writeRun({.dir = dir.path() + "/b", .ranks = 8, .collectives_per_rank = 100});
  const std::vector<std::string> a = shardStates(dir.path() + "/a", 2), b = shardStates(dir.path() + "/b", 2);
  const std::vector<std::string> a3 = shardStates(dir.path() + "/a", 3);
  EXPECT_NE(mergeError(sourcesOf({a[0]})).find("shard 1 of 2 is missing"), std::string::npos);
  EXPECT_NE(mergeError(sourcesOf({a[0], a[0]})).find("state 1 and state 0 are both shard 0"), std::string::npos);
  EXPECT_NE(mergeError(sourcesOf({a[0], b[1]})).find("state 1 is not a shard of the run state 0 is"), std::string::npos);
  EXPECT_NE(mergeError(sourcesOf({a[0], a3[1]})).find("cut into 3 shards"), std::string::npos);
  EXPECT_NE(mergeError({}).find("no shard state"), std::string::npos);
}

TEST(ShardState, ABrokenStateIsNamedAndNothingIsMerged) {
  testutil::TempDir dir;
  writeRun({.dir = dir.path() + "/run", .ranks = 8, .collectives_per_rank = 100});
  const std::vector<std::string> states = shardStates(dir.path() + "/run", 2);
  const std::string cut = states[1].substr(0, states[1].size() / 2);
  EXPECT_NE(mergeError(sourcesOf({states[0], cut})).find("state 1: not a readable shard state (its checksum does not match"), std::string::npos)
      << mergeError(sourcesOf({states[0], cut}));
  const std::string foreign = "this is a text file, not a state";
  EXPECT_NE(mergeError(sourcesOf({states[0], foreign})).find("state 1: not a readable shard state"), std::string::npos);
  // Damage anywhere (sizes, name ids past the state's names): refused before anything of it is
  // decoded, not believed (a size read from damage was allocated, and ASan stopped the test).
  std::string garbled = states[1];
  for (size_t i = 40; i < garbled.size(); i += 997) garbled[i] = static_cast<char>(0xff);
  EXPECT_NE(mergeError(sourcesOf({states[0], garbled})).find("state 1: not a readable shard state (its checksum"), std::string::npos);
  std::string header_damaged = states[0];
  header_damaged[2] = 'X';
  EXPECT_NE(mergeError(sourcesOf({header_damaged, states[1]})).find("state 0: not a readable shard state"), std::string::npos);
  EXPECT_NE(mergeError({shardFile(dir.path() + "/none")}).find(dir.path() + "/none: cannot be read"), std::string::npos);
}

}  // namespace
}  // namespace commtrace::report
