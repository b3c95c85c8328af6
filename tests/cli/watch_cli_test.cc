// `commtrace watch` as a user runs it on a run directory: the planted straggler of a
// synthetic run named (and only it), each alert also a JSON line of alerts.jsonl; a healthy
// run quiet; files still open followed until --timeout; a missing directory an error.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/support/run_program.h"
#include "tests/support/temp_dir.h"
#include "tools/synthetic/run_writer.h"

namespace commtrace {
namespace {

using testutil::ProgramResult;
using testutil::TempDir;

ProgramResult commtrace(const TempDir& scratch, std::vector<std::string> args) {
  args.insert(args.begin(), COMMTRACE_CLI);
  return testutil::runProgram(std::move(args), scratch.path());
}

std::string writeRun(const TempDir& dir, int straggler_rank, uint64_t in_flight_ops = 0) {
  synthetic::SyntheticRunOptions options;
  options.dir = dir.path() + "/run";
  options.ranks = 16;
  options.collectives_per_rank = 3000;  // some 7 s of run
  options.straggler_rank = straggler_rank;
  options.in_flight_ops = in_flight_ops;
  synthetic::SyntheticRunTruth truth;
  std::string error;
  EXPECT_TRUE(synthetic::writeSyntheticRun(options, truth, error)) << error;
  return options.dir;
}

std::vector<nlohmann::json> alertsOf(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

TEST(WatchCli, NamesThePlantedStragglerAndWritesEachAlertAsJson) {
  TempDir scratch, dir;
  const std::string run = writeRun(dir, 3);
  const ProgramResult r = commtrace(scratch, {"watch", run, "--interval", "0.05"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("commtrace: STRAGGLER rank 3 (host node0, GPU 3) +"), std::string::npos) << r.out;
  const std::vector<nlohmann::json> alerts = alertsOf(run + "/alerts.jsonl");
  ASSERT_FALSE(alerts.empty());
  for (const nlohmann::json& a : alerts) {
    EXPECT_EQ(a["kind"], "STRAGGLER") << a.dump();
    EXPECT_EQ(a["rank"], 3) << a.dump() << ": only the planted rank";
    EXPECT_NE(r.out.find(a["line"].get<std::string>()), std::string::npos) << "each JSON line is a printed alert";
  }
}

TEST(WatchCli, AHealthyRunIsQuiet) {
  TempDir scratch, dir;
  const std::string run = writeRun(dir, -1);
  const ProgramResult r = commtrace(scratch, {"watch", run, "--interval", "0.05"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(alertsOf(run + "/alerts.jsonl").empty());
}

TEST(WatchCli, FilesStillOpenAreFollowedUntilTheTimeout) {
  TempDir scratch, dir;
  const std::string run = writeRun(dir, 3, 4);
  const ProgramResult r = commtrace(scratch, {"watch", run, "--interval", "0.05", "--timeout", "0.5"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("commtrace: STRAGGLER rank 3 "), std::string::npos) << r.out;
}

TEST(WatchCli, AMissingDirectoryIsAnError) {
  TempDir scratch;
  const ProgramResult r = commtrace(scratch, {"watch", scratch.path() + "/no-such-run", "--alerts", scratch.path() + "/a.jsonl"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no-such-run: not a directory"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace commtrace
