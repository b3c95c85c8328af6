// commtrace-nccl-driver and `commtrace demo` as a user runs them: one process per rank with
// torchrun's environment, the plugin chosen as NCCL would, failures named per rank, and the
// demo end to end through the real libcommtrace.so.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "nccl-plugin/profiler_abi.h"
#include "sink/reader.h"
#include "tests/fakes/fake_profiler_log.h"
#include "tests/support/run_program.h"
#include "tests/support/temp_dir.h"

namespace commtrace {
namespace {

namespace fs = std::filesystem;
using testutil::FakeCall;
using testutil::TempDir;

using Result = testutil::ProgramResult;

// Runs args with the environment changed by env (nullopt: unset), stdout and stderr captured.
Result run(std::vector<std::string> args, const std::map<std::string, std::optional<std::string>>& env,
           const TempDir& scratch) {
  return testutil::runProgram(std::move(args), scratch.path(), env);
}

const std::string kTiny = COMMTRACE_SCENARIO_DIR "/tiny.json";

// The driver on tiny.json with the fake plugin logging into dir.
Result runTiny(const TempDir& dir, std::vector<std::string> extra = {}, std::map<std::string, std::optional<std::string>> env = {}) {
  std::vector<std::string> args = {COMMTRACE_DRIVER, "--scenario", kTiny, "--out", dir.path() + "/run"};
  if (std::find(extra.begin(), extra.end(), "--plugin") == extra.end()) args.insert(args.end(), {"--plugin", FAKE_PLUGIN_ALL});
  args.insert(args.end(), extra.begin(), extra.end());
  env.emplace("FAKE_PROFILER_LOG_DIR", dir.path());
  env.emplace("COMMTRACE_DIR", std::nullopt);
  env.emplace("NCCL_PROFILER_PLUGIN", std::nullopt);
  return run(args, env, dir);
}

// Per rank (from the launcher's RANK), what its plugin logged.
std::map<int, std::vector<FakeCall>> logsByRank(const TempDir& dir) {
  std::map<int, std::vector<FakeCall>> out;
  for (const std::string& file : testutil::fakeLogFiles(dir.path())) {
    auto log = testutil::readFakeLog(file);
    if (!log.empty()) out[std::stoi(log.front()["env_RANK"])] = std::move(log);
  }
  return out;
}

size_t countStarts(const std::vector<FakeCall>& log, uint64_t type) {
  return static_cast<size_t>(std::count_if(log.begin(), log.end(), [&](const FakeCall& c) { return c.isStart(type); }));
}

TEST(DriverCli, OneProcessPerRankWithTorchrunsEnvironment) {
  TempDir dir;
  const Result r = runTiny(dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("rank 0/2 done"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rank 1/2 done"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("bound as ncclProfiler_v7"), std::string::npos) << r.out;

  const auto truth = nlohmann::json::parse(testutil::readText(dir.path() + "/run/ground-truth.json"));
  EXPECT_EQ(truth["scenario"], "tiny");
  const auto logs = logsByRank(dir);
  ASSERT_EQ(logs.size(), 2u);
  std::set<std::string> pids;
  for (const auto& [rank, log] : logs) {
    const FakeCall& init = log.front();
    ASSERT_EQ(init.kind, "init");
    EXPECT_EQ(init["env_LOCAL_RANK"], std::to_string(rank));
    EXPECT_EQ(init["env_WORLD_SIZE"], "2");
    EXPECT_EQ(init["env_LOCAL_WORLD_SIZE"], "2");
    EXPECT_EQ(init["env_NODE_RANK"], "0");
    EXPECT_EQ(init["env_NCCL_HOSTID"], "commtrace-tiny-node0");
    EXPECT_EQ(init["env_NCCL_PROFILER_PLUGIN"], FAKE_PLUGIN_ALL);
    EXPECT_EQ(init["env_COMMTRACE_DIR"], dir.path() + "/run");
    EXPECT_EQ(init["comm_id"], truth["comms"][0]["id"].dump());
    EXPECT_EQ(init["rank"], std::to_string(rank));
    EXPECT_EQ(init["n_ranks"], "2");
    EXPECT_EQ(countStarts(log, nccl::kColl), truth["planted_ops_per_rank"][rank]["colls"].get<size_t>());
    EXPECT_EQ(countStarts(log, nccl::kP2p), truth["planted_ops_per_rank"][rank]["p2ps"].get<size_t>());
    EXPECT_EQ(log.back().kind, "finalize");
  }
  EXPECT_EQ(truth["collectives"].size(), 6u);  // 3 steps of an AllReduce and an AllGather
  EXPECT_EQ(truth["p2p"].size(), 3u);
}

TEST(DriverCli, PreloadBindsThroughStaticPlugin) {
  TempDir dir;
  const Result r = runTiny(dir, {"--preload"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto logs = logsByRank(dir);
  ASSERT_EQ(logs.size(), 2u);
  for (const auto& [rank, log] : logs) EXPECT_EQ(log.front()["env_NCCL_PROFILER_PLUGIN"], "STATIC_PLUGIN");
}

TEST(DriverCli, ForcedVersionAndRanksOnly) {
  TempDir dir;
  const Result r = runTiny(dir, {"--profiler-version", "4", "--ranks-only", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("rank 1/2 done"), std::string::npos);
  EXPECT_NE(r.out.find("bound as ncclProfiler_v4"), std::string::npos) << r.out;
  const auto logs = logsByRank(dir);
  ASSERT_EQ(logs.size(), 1u);
  EXPECT_EQ(logs.begin()->first, 1);
  EXPECT_EQ(logs.begin()->second.front()["v"], "4");
  const auto truth = nlohmann::json::parse(testutil::readText(dir.path() + "/run/ground-truth.json"));
  EXPECT_EQ(truth["ranks"], 2) << "the ground truth still covers the whole job";
}

TEST(DriverCli, AnInheritedCommtraceDirWins) {
  TempDir dir;
  const Result r = runTiny(dir, {}, {{"COMMTRACE_DIR", dir.path() + "/elsewhere"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const auto& [rank, log] : logsByRank(dir)) EXPECT_EQ(log.front()["env_COMMTRACE_DIR"], dir.path() + "/elsewhere");
}

TEST(DriverCli, AFailingRankIsNamedWithItsStatus) {
  TempDir dir;
  const Result r = runTiny(dir, {"--plugin", "/nonexistent/libplugin.so"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("cannot open profiler plugin '/nonexistent/libplugin.so'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("commtrace: rank 0 (pid "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(") exited with status 1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("commtrace: 2 of 2 ranks failed"), std::string::npos) << r.err;
}

TEST(DriverCli, BadScenarioOrUsageExits2) {
  TempDir dir;
  std::ofstream(dir.path() + "/bad.json") << R"({"name": "bad", "nodes": 1})";
  Result r = run({COMMTRACE_DRIVER, "--scenario", dir.path() + "/bad.json"}, {}, dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "commtrace: " + dir.path() + "/bad.json: 'ranks_per_node' is missing\n");
  r = run({COMMTRACE_DRIVER, "--scenario", kTiny, "--profiler-version", "3"}, {}, dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("commtrace: ", 0), 0u) << r.err;
  r = run({COMMTRACE_DRIVER, "--scenario", kTiny, "--preload"}, {}, dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--preload needs --plugin"), std::string::npos) << r.err;
}

// --check reads the scenario and plays nothing: no rank, no ground truth.
TEST(DriverCli, CheckSaysWhetherAScenarioCanBePlayedAndPlaysNothing) {
  TempDir dir;
  Result r = runTiny(dir, {"--check"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out + r.err, "");
  EXPECT_FALSE(fs::exists(dir.path() + "/run"));
  EXPECT_TRUE(testutil::fakeLogFiles(dir.path()).empty());
  std::ofstream(dir.path() + "/bad.json") << R"({"name": "bad", "nodes": 1})";
  r = run({COMMTRACE_DRIVER, "--scenario", dir.path() + "/bad.json", "--check"}, {}, dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "commtrace: " + dir.path() + "/bad.json: 'ranks_per_node' is missing\n");
}

// ---------------------------------------------------------------- commtrace demo

TEST(Demo, RunsTheJobThroughLibcommtraceInSeconds) {
  TempDir dir;
  const std::string demo_dir = dir.path() + "/demo";
  const auto start = std::chrono::steady_clock::now();
  Result r = run({COMMTRACE_CLI, "demo", "--dir", demo_dir}, {{"COMMTRACE_DIR", std::nullopt}}, dir);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_LT(seconds, 20.0);
  for (int rank = 0; rank < 8; ++rank) EXPECT_NE(r.out.find("rank " + std::to_string(rank) + "/8 done"), std::string::npos);
  EXPECT_NE(r.out.find("hold 1280 of 1280 planted collective records"), std::string::npos) << r.out;
  // The report on the run comes first and finds what the planted section then lists.
  const size_t report_at = r.out.find("Findings"), planted_at = r.out.find("Planted in 'demo'");
  ASSERT_NE(report_at, std::string::npos) << r.out;
  EXPECT_LT(report_at, planted_at);
  EXPECT_NE(r.out.find("Straggler: rank 6 (commtrace-demo-node1)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Slow link: rank 3 <-> rank 7"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("straggler: rank 6"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("slow link: ranks 3 <-> 7"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" of 1280 send/receive records"), std::string::npos) << r.out;
  const auto traces = [&] {
    size_t n = 0;
    for (const auto& e : fs::directory_iterator(demo_dir)) n += e.path().extension() == ".ctrace";
    return n;
  };
  EXPECT_EQ(traces(), 8u);
  EXPECT_TRUE(fs::exists(demo_dir + "/ground-truth.json"));
  // The next commands as they run: `commtrace` is not on PATH after ./dev demo.
  EXPECT_NE(r.out.find("\nNext: " + std::string(COMMTRACE_CLI) + " report " + demo_dir + " --format html"), std::string::npos) << r.out;

  // Again into the same directory: the old run is replaced, not added to.
  r = run({COMMTRACE_CLI, "demo", "--dir", demo_dir, "--version", "4"}, {{"COMMTRACE_DIR", std::nullopt}}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("bound as ncclProfiler_v4"), std::string::npos) << r.out;
  EXPECT_EQ(traces(), 8u);
}

// Every collective record the real plugin wrote is a planted instance, with the planted
// identities (comm_id, func, seq, op_index) and the planted GPU span of that rank.
TEST(Demo, RecordsCarryThePlantedIdentitiesAndGpuTimes) {
  TempDir dir;
  const std::string demo_dir = dir.path() + "/demo";
  const Result r = run({COMMTRACE_CLI, "demo", "--dir", demo_dir}, {{"COMMTRACE_DIR", std::nullopt}}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto truth = nlohmann::json::parse(testutil::readText(demo_dir + "/ground-truth.json"));
  std::map<std::tuple<uint64_t, std::string, uint64_t>, const nlohmann::json*> planted;  // (comm, func, seq)
  for (const auto& c : truth["collectives"]) planted[{c["comm_id"], c["func"], c["seq"]}] = &c;

  size_t matched = 0;
  for (const auto& e : fs::directory_iterator(demo_dir)) {
    if (e.path().extension() != ".ctrace") continue;
    TraceReader reader;
    std::string error;
    ASSERT_TRUE(reader.open(e.path().string(), error)) << error;
    const int rank = reader.header().rank();
    DecodedChunk chunk;
    while (reader.next(chunk)) {
      for (const RecordSlot& slot : chunk.records) {
        if (slot.kind != RecordKind::kColl) continue;
        const CollRecord& c = slot.payload.coll;
        const auto it = planted.find({c.comm_id, std::string(reader.str(c.func)), c.seq});
        ASSERT_NE(it, planted.end()) << "rank " << rank << ": no planted " << reader.str(c.func) << " seq " << c.seq;
        const nlohmann::json& inst = *it->second;
        EXPECT_EQ(c.op_index, inst["op_index"].get<uint64_t>());
        EXPECT_EQ(c.count, inst["count"].get<uint64_t>());
        EXPECT_EQ(c.n_channels, inst["n_channels"].get<int>());
        for (const auto& m : inst["members"]) {
          if (m["rank"] != rank) continue;
          EXPECT_EQ(c.gpu_start_ns, m["gpu_start_ns"].get<uint64_t>()) << reader.str(c.func) << " seq " << c.seq;
          EXPECT_EQ(c.gpu_end_ns, m["gpu_stop_ns"].get<uint64_t>()) << reader.str(c.func) << " seq " << c.seq;
          ++matched;
        }
      }
    }
  }
  size_t expected = 0;
  for (const auto& per_rank : truth["planted_ops_per_rank"]) expected += per_rank["colls"].get<size_t>();
  EXPECT_EQ(matched, expected);
}

TEST(Demo, LeavesADirectoryWithOtherFilesAlone) {
  TempDir dir;
  std::ofstream(dir.path() + "/notes.txt") << "mine";
  const Result r = run({COMMTRACE_CLI, "demo", "--dir", dir.path()}, {}, dir);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("commtrace: " + dir.path() + " holds "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("which no demo wrote"), std::string::npos) << r.err;
  EXPECT_EQ(testutil::readText(dir.path() + "/notes.txt"), "mine");
}

TEST(Demo, ABadScenarioExits2) {
  TempDir dir;
  std::ofstream(dir.path() + "/bad.json") << "{";
  const Result r = run({COMMTRACE_CLI, "demo", "--dir", dir.path() + "/d", "--scenario", dir.path() + "/bad.json"}, {}, dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("commtrace: " + dir.path() + "/bad.json: not valid JSON", 0), 0u) << r.err;
  EXPECT_FALSE(fs::exists(dir.path() + "/d")) << "nothing is created for a scenario that cannot run";
}

// A scenario that is JSON but cannot be played is refused before the directory is touched:
// an earlier demo's files stay.
TEST(Demo, AScenarioThatCannotBePlayedLeavesTheDirectoryAlone) {
  TempDir dir;
  const std::string demo_dir = dir.path() + "/d";
  fs::create_directories(demo_dir);
  std::ofstream(demo_dir + "/scenario.json") << "an earlier demo's";
  std::ofstream(dir.path() + "/bad.json") << R"({"name": "bad", "nodes": 1})";
  const Result r = run({COMMTRACE_CLI, "demo", "--dir", demo_dir, "--scenario", dir.path() + "/bad.json"}, {}, dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "commtrace: " + dir.path() + "/bad.json: 'ranks_per_node' is missing\n");
  EXPECT_EQ(testutil::readText(demo_dir + "/scenario.json"), "an earlier demo's");
}

}  // namespace
}  // namespace commtrace
