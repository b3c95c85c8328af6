// A run reported in shards as a user runs it: `commtrace report RUN --shard I/N --state F`
// then `commtrace merge F...`, and `mpirun -np N commtrace-mpi report RUN` (where MPI is
// installed). The driver's demo job (AlltoAll pieces, NVTX paths, proxy steps, a straggler
// and a slow link) and a synthetic 64-rank job: merged reports equal the whole run's but for
// the walk's figures (tests/support/walk_figures.h), and the MPI report from N processes is
// the merge of N shard files to the byte (from 1 process: the plain report's).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/run_program.h"
#include "tests/support/temp_dir.h"
#include "tests/support/walk_figures.h"

namespace commtrace {
namespace {

using nlohmann::json;
using testutil::ProgramResult;
using testutil::TempDir;

// Every process of a test reads the same time, so that reports made apart are the same.
const std::map<std::string, std::optional<std::string>> kFixedNow = {{"SOURCE_DATE_EPOCH", "1800000000"}};

ProgramResult cli(const TempDir& scratch, std::vector<std::string> args) {
  args.insert(args.begin(), COMMTRACE_CLI);
  return testutil::runProgram(std::move(args), scratch.path(), kFixedNow);
}

struct Runs {
  TempDir scratch;
  std::string demo = scratch.path() + "/demo", wide = scratch.path() + "/wide";
  Runs() {
    const ProgramResult d = testutil::runProgram(
        {COMMTRACE_DRIVER, "--scenario", COMMTRACE_SCENARIO_DIR "/demo.json", "--out", demo, "--plugin", COMMTRACE_SO}, scratch.path(),
        {{"COMMTRACE_PROXY_EVENTS", "1"}});
    EXPECT_EQ(d.exit_code, 0) << d.err;
    const ProgramResult w = testutil::runProgram({COMMTRACE_SYNTH, "--run-dir", wide, "--ranks", "64", "--collectives", "1500", "--straggler-rank", "21"},
                                                 scratch.path());
    EXPECT_EQ(w.exit_code, 0) << w.err;
  }
};

Runs& runs() {
  static Runs r;
  return r;
}

std::string reportJson(const std::string& dir) {
  const ProgramResult r = cli(runs().scratch, {"report", dir, "--format", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

// The states of the run's N shards, written by N `report --shard` runs.
std::vector<std::string> writeShards(const std::string& dir, int shards) {
  std::vector<std::string> files;
  for (int s = 0; s < shards; ++s) {
    files.push_back(dir + ".shard" + std::to_string(s) + "of" + std::to_string(shards));
    const ProgramResult r = cli(runs().scratch, {"report", dir, "--shard", std::to_string(s) + "/" + std::to_string(shards), "--state", files.back()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("Wrote " + files.back() + ": the state of shard " + std::to_string(s) + " of " + std::to_string(shards)), std::string::npos) << r.out;
  }
  return files;
}

std::string mergeJson(std::vector<std::string> states) {
  states.insert(states.begin(), {"merge", "--format", "json"});
  const ProgramResult r = cli(runs().scratch, states);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

TEST(ShardCli, TheDemoMergedFromShardsIsTheWholeRunButForTheWalksFigures) {
  const std::string whole = reportJson(runs().demo);
  EXPECT_FALSE(testutil::flaggedStragglers(whole).empty());
  const json bandwidth = json::parse(whole)["bandwidth"];
  EXPECT_TRUE(std::any_of(bandwidth.begin(), bandwidth.end(), [](const json& row) { return row["func"] == "AlltoAll"; }))
      << "the demo's AlltoAll: calls of pieces";
  for (const int shards : {1, 2, 3}) {
    const std::string merged = mergeJson(writeShards(runs().demo, shards));
    EXPECT_EQ(testutil::shardsOf(merged), shards);
    if (shards == 1) {
      EXPECT_EQ(merged, whole);
    }
    const json patch = json::diff(testutil::withoutWalkFigures(whole), testutil::withoutWalkFigures(merged));
    EXPECT_TRUE(patch.empty()) << shards << " shards: " << patch.dump().substr(0, 3000);
    EXPECT_EQ(testutil::flaggedStragglers(merged), testutil::flaggedStragglers(whole)) << shards;
  }
}

TEST(ShardCli, OptionsThatDoNotGoTogetherAreUsageErrors) {
  const std::string dir = runs().demo;
  const std::string state = runs().scratch.path() + "/unused.state";
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"report", dir, "--shard", "2/2", "--state", state},
           {"report", dir, "--shard", "1/0", "--state", state},
           {"report", dir, "--shard", "one", "--state", state},
           {"report", dir, "--shard", "0/2"},
           {"report", dir, "--shard", "0/2", "--state", state, "--from", "1s"},
           {"report", dir, "--shard", "0/2", "--state", state, "--format", "json"}}) {
    const ProgramResult r = cli(runs().scratch, args);
    EXPECT_EQ(r.exit_code, 2) << args[3] << " " << r.err;
    EXPECT_NE(r.err.find("commtrace: "), std::string::npos);
  }
}

TEST(ShardCli, AMergeOfStatesThatAreNotOneRunsShardsSaysWhy) {
  const std::vector<std::string> two = writeShards(runs().demo, 2);
  ProgramResult r = cli(runs().scratch, {"merge", two[0]});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("shard 1 of 2 is missing"), std::string::npos) << r.err;
  const std::vector<std::string> other = writeShards(runs().wide, 2);
  r = cli(runs().scratch, {"merge", two[0], other[1]});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(other[1] + " is not a shard of the run " + two[0] + " is"), std::string::npos) << r.err;
  r = cli(runs().scratch, {"merge", two[0], COMMTRACE_SCENARIO_DIR "/demo.json"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("demo.json: not a readable shard state"), std::string::npos) << r.err;
}

#ifdef COMMTRACE_MPI
// mpirun as the tests run it: oversubscribed (more processes than cores), and allowed as
// root where the tests run as root (Open MPI refuses otherwise).
ProgramResult mpiReport(int processes, const std::string& dir) {
  std::vector<std::string> args = {COMMTRACE_MPIEXEC, COMMTRACE_MPIEXEC_NUMPROC_FLAG, std::to_string(processes)};
  for (const std::string& flag : std::vector<std::string>{COMMTRACE_MPIEXEC_FLAGS}) args.push_back(flag);
  if (geteuid() == 0 && COMMTRACE_MPIEXEC_IS_OPEN_MPI) args.push_back("--allow-run-as-root");
  for (const std::string a : {COMMTRACE_MPI, "report", dir.c_str(), "--format", "json"}) args.push_back(a);
  return testutil::runProgram(args, runs().scratch.path(), kFixedNow);
}

TEST(ShardCli, TheMpiReportOfNProcessesIsTheMergeOfNShards) {
  for (const std::string& dir : {runs().demo, runs().wide}) {
    const ProgramResult one = mpiReport(1, dir);
    ASSERT_EQ(one.exit_code, 0) << one.err;
    EXPECT_EQ(one.out, reportJson(dir)) << dir;
    for (const int processes : {2, 4}) {
      const ProgramResult r = mpiReport(processes, dir);
      ASSERT_EQ(r.exit_code, 0) << r.err;
      EXPECT_EQ(r.out, mergeJson(writeShards(dir, processes))) << dir << " " << processes;
    }
  }
  // The wide run's planted straggler, named first from 4 processes as from one.
  const json four = json::parse(mpiReport(4, runs().wide).out);
  EXPECT_NE(four["findings"][0].get<std::string>().find("Straggler: rank 21 "), std::string::npos) << four["findings"][0];
}

TEST(ShardCli, AnMpiProcessThatCannotReadItsShardStopsTheReportWithAReason) {
  const ProgramResult r = mpiReport(2, runs().scratch.path() + "/no-such-run");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no-such-run"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("could not read its shard"), std::string::npos) << r.err;
}
#endif

}  // namespace
}  // namespace commtrace
