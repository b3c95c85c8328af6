// `commtrace watch` as a user runs it on a run directory: the planted straggler of a
// synthetic run named (and only it), each alert also a JSON line of alerts.jsonl; a healthy
// run quiet; files still open followed until --timeout; a missing directory an error; and,
// while the NCCL driver plays a job in real time through libcommtrace.so, a rank that
// becomes 6 % slower mid-run named within 5 s.
#include <gtest/gtest.h>

#include <algorithm>

#include <fstream>
#include <map>
#include <regex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "tools/report/analyses/lateness.h"
#include "tools/report/load/run_loader.h"

#include "tests/support/commtrace_cli.h"
#include "tests/support/live_run.h"
#include "tests/support/report_load_support.h"
#include "tests/support/run_program.h"
#include "tests/support/temp_dir.h"
#include "tools/synthetic/run_writer.h"

namespace commtrace {
namespace {

using testutil::ProgramResult;
using testutil::TempDir;

using testutil::commtrace;

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

using testutil::alertsOf;

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

// Prometheus' text format, line by line: comments, or a metric name, braced labels and a number.
TEST(WatchCli, WritesLiveMetricsInPrometheusTextFormatThatAgreeWithTheReport) {
  TempDir scratch, dir, prom;
  const std::string run = writeRun(dir, 3);
  const ProgramResult r = commtrace(scratch, {"watch", run, "--interval", "0.05", "--prom-dir", prom.path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(prom.path() + "/commtrace.prom");
  ASSERT_TRUE(in) << "no commtrace.prom";
  EXPECT_FALSE(std::ifstream(prom.path() + "/commtrace.prom.tmp")) << "written through a temporary renamed over it";
  const std::regex sample(R"(^([a-z_]+)\{((?:[a-z_]+="(?:[^"\\]|\\.)*",?)*)\} (-?[0-9.e+-]+)$)");
  std::map<std::string, double> collectives_by_labels;
  double collectives = 0, rank3_wait_s = -1;
  bool rank3_straggler = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) continue;
    std::smatch m;
    ASSERT_TRUE(std::regex_match(line, m, sample)) << line;
    const std::string name = m[1], labels = m[2];
    const double value = std::stod(m[3]);
    if (name == "commtrace_collectives_total") collectives += value;
    if (name == "commtrace_wait_caused_seconds_total" && labels.find("rank=\"3\"") != std::string::npos) rank3_wait_s = value;
    if (name == "commtrace_straggler") {
      EXPECT_NE(labels.find("rank=\"3\""), std::string::npos) << line;
      rank3_straggler = true;
    }
  }
  EXPECT_TRUE(rank3_straggler);
  const ProgramResult report = commtrace(scratch, {"report", run, "--format", "json"});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  const nlohmann::json j = nlohmann::json::parse(report.out);
  EXPECT_EQ(collectives, j["run"]["collective_instances"].get<double>());
  double report_wait_us = -1;
  for (const nlohmann::json& s : j["stragglers"])
    if (s["rank"] == 3) report_wait_us = s["wait_caused_us"].get<double>();
  EXPECT_NEAR(rank3_wait_s, report_wait_us / 1e6, 1e-6 * report_wait_us);
}

// Two ranks, an AllReduce a second for 30 s; rank 1's rings overflow at 5 s and 6 s (50, then
// 70 more records lost) and never again: DROPS rank 1 with the 120 it lost, RECOVERED once its
// file has gone 10 s on without a loss; rank 0 is never named.
TEST(WatchCli, ARankLosingRecordsIsDropsUntilItsFileGoesOnWithoutALoss) {
  TempDir scratch;
  const std::string run = scratch.path() + "/run";
  std::filesystem::create_directories(run);
  constexpr uint64_t kWorld = 0xD0, kSecond = 1'000'000'000;
  for (int rank = 0; rank < 2; ++rank) {
    std::vector<std::vector<RecordSlot>> chunks{{testing::commInfo(kWorld, 2, rank, rank)}};
    for (uint64_t second = 1; second <= 30; ++second) {
      RecordSlot op = testing::coll({.comm_id = kWorld, .seq = second, .op_index = second});
      op.payload.coll.cpu_start_ns = second * kSecond;
      op.payload.coll.cpu_end_ns = second * kSecond + 1000;
      chunks.push_back({op});
      if (rank == 1 && (second == 5 || second == 6)) {
        RecordSlot drop{};
        drop.kind = RecordKind::kDropSummary;
        drop.payload.drop_summary = {second == 5 ? 50u : 120u, 0, second * kSecond, 1, static_cast<uint8_t>(RecordKind::kColl), 0};
        chunks.back().push_back(drop);
      }
    }
    testing::writeRankFile(run, "rank" + std::to_string(rank), testing::rankHeader(rank, 2), chunks);
  }
  const ProgramResult r = commtrace(scratch, {"watch", run, "--interval", "0.05", "--timeout", "5"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::vector<nlohmann::json> alerts = alertsOf(run + "/alerts.jsonl");
  ASSERT_EQ(alerts.size(), 2u) << r.out;
  EXPECT_EQ(alerts[0]["kind"], "DROPS");
  EXPECT_EQ(alerts[0]["rank"], 1);
  EXPECT_EQ(alerts[0]["lost_total"], 120);
  EXPECT_EQ(alerts[1]["kind"], "RECOVERED");
  EXPECT_EQ(alerts[1]["of"], "DROPS");
  EXPECT_NE(r.out.find("commtrace: DROPS rank 1 (host host0, GPU 1) lost 120 records before its trace file"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("commtrace: RECOVERED rank 1"), std::string::npos) << r.out;
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

// A job whose processes died without closing their files: once they have been silent
// --gone-after seconds, watch says so and stops, without a --timeout.
TEST(WatchCli, ProcessesSilentLongerThanGoneAfterEndTheWatch) {
  TempDir scratch, dir;
  const std::string run = writeRun(dir, 3, 4);
  const auto start = std::chrono::steady_clock::now();
  const ProgramResult r = commtrace(scratch, {"watch", run, "--interval", "0.05", "--gone-after", "1"});
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LT(took, 10.0);
  EXPECT_NE(r.err.find("commtrace: 16 of 16 processes went silent for 1 s without closing their files (they died, or froze): "
                       "the job is taken as ended"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("commtrace: STRAGGLER rank 3 "), std::string::npos) << r.out;
}

// Started before the job, it waits for the run directory; one that never comes is an error
// at the timeout, and a file where the directory should be is one at once.
TEST(WatchCli, WaitsForTheRunDirectoryUntilTheTimeout) {
  TempDir scratch;
  const ProgramResult r = commtrace(scratch, {"watch", scratch.path() + "/no-such-run", "--interval", "0.05", "--timeout", "0.3"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("commtrace: " + scratch.path() + "/no-such-run: no such directory, and none appeared within 0.3 s"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("waiting for"), std::string::npos) << r.err;
  std::ofstream(scratch.path() + "/a-file") << "x";
  const ProgramResult f = commtrace(scratch, {"watch", scratch.path() + "/a-file"});
  EXPECT_EQ(f.exit_code, 1);
  EXPECT_NE(f.err.find("a-file: not a directory"), std::string::npos) << f.err;
}

// A scenario played by the NCCL driver in real time while `commtrace watch` follows its run
// directory: the watch's output and the alerts it wrote.
struct WatchedJob {
  TempDir scratch, driver_scratch, dir;
  std::string run_dir = dir.path() + "/run";
  ProgramResult driver, watch;
  std::vector<nlohmann::json> alerts;

  WatchedJob(const std::string& scenario, const std::string& interval, const std::string& timeout) {
    std::thread job([&] {
      driver = testutil::runProgram({COMMTRACE_DRIVER, "--scenario", std::string(COMMTRACE_SCENARIO_DIR) + "/" + scenario, "--plugin",
                                     COMMTRACE_SO, "--out", run_dir, "--time-scale", "1"},
                                    driver_scratch.path());
    });
    watch = commtrace(scratch, {"watch", run_dir, "--interval", interval, "--timeout", timeout});
    job.join();
    EXPECT_EQ(driver.exit_code, 0) << driver.err;
    EXPECT_EQ(watch.exit_code, 0) << watch.err;
    alerts = alertsOf(run_dir + "/alerts.jsonl");
  }
};

TEST(WatchCli, ARankSlowingMidRunInARealTimeJobIsNamedWithinFiveSeconds) {
  const WatchedJob w("live_straggler.json", "0.2", "60");
  ASSERT_EQ(w.driver.exit_code, 0);
  const std::string& run_dir = w.run_dir;
  const ProgramResult& r = w.watch;
  const std::vector<nlohmann::json>& alerts = w.alerts;
  ASSERT_EQ(alerts.size(), 1u) << r.out;
  EXPECT_EQ(alerts[0]["kind"], "STRAGGLER");
  EXPECT_EQ(alerts[0]["rank"], 1);
  const uint64_t onset = testutil::onsetUtc(run_dir);
  ASSERT_NE(onset, UINT64_MAX) << "the planted slowdown is in the files";
  const auto raised = alerts[0]["raised_utc_ns"].get<uint64_t>();
  EXPECT_GT(raised, onset);
  EXPECT_LE(raised - onset, 5'000'000'000u) << "raised " << (raised - onset) / 1e9 << " s after the slowdown began";
  // since: the first window judged slow, the one the slowdown began in or, when it began late
  // in that window, the next.
  const auto since = alerts[0]["since_utc_ns"].get<uint64_t>();
  EXPECT_LT(since, onset + 1'000'000'000u);
  EXPECT_GT(since + 1'000'000'000u, onset);
}

// Tensor parallel 8 inside each of 2 nodes, data-parallel pairs across them, in real time:
// rank 11 computes 8 % longer from step 75. Its TP peers wait for it and so reach their DP
// AllReduce late, where their pairs wait for them: the alerts name rank 11 alone, the first
// within 5 s of the onset.
TEST(WatchCli, ASlowGpuInsideATensorParallelGroupIsNamedNotItsPeers) {
  const WatchedJob w("live_tp_straggler.json", "0.2", "60");
  ASSERT_EQ(w.driver.exit_code, 0);
  const std::string& run_dir = w.run_dir;
  const ProgramResult& r = w.watch;
  const std::vector<nlohmann::json>& alerts = w.alerts;
  ASSERT_FALSE(alerts.empty()) << r.out;
  for (const nlohmann::json& a : alerts) EXPECT_EQ(a["rank"], 11) << a.dump() << "\n" << r.out;
  EXPECT_EQ(alerts[0]["kind"], "STRAGGLER");
  const uint64_t onset = testutil::onsetUtc(run_dir, 11, 500'000);
  ASSERT_NE(onset, UINT64_MAX) << "the planted slowdown is in the files";
  const auto raised = alerts[0]["raised_utc_ns"].get<uint64_t>();
  EXPECT_LE(raised - onset, 5'000'000'000u) << "raised " << (raised - onset) / 1e9 << " s after the slowdown began";
  std::printf("STRAGGLER rank 11 raised %.2f s after its slowdown began\n", static_cast<double>(raised - onset) / 1e9);
}

// Rank 5 of a tensor-parallel group of 4 stops issuing ops for 12 s: its TP peers wait in
// the group's AllReduce and their data-parallel pairs wait for them. One HANG, naming rank 5;
// the pairs' waits are knock-ons, not hangs of their own.
TEST(WatchCli, ARankThatStopsInsideATensorParallelGroupIsOneHangNamingIt) {
  const WatchedJob w("live_tp_hang.json", "0.5", "90");
  ASSERT_EQ(w.driver.exit_code, 0);
  const ProgramResult& r = w.watch;
  const std::vector<nlohmann::json>& alerts = w.alerts;
  std::vector<nlohmann::json> hangs;
  for (const nlohmann::json& a : alerts)
    if (a["kind"] == "HANG") hangs.push_back(a);
  ASSERT_EQ(hangs.size(), 1u) << r.out;
  std::vector<int> others;
  for (const nlohmann::json& m : hangs[0]["others"]) others.push_back(m["rank"]);
  EXPECT_NE(std::find(others.begin(), others.end(), 5), others.end()) << hangs[0].dump();
  EXPECT_NE(r.out.find("rank 5 last seen at"), std::string::npos) << r.out;
}

// The NCCL driver plays 4 ranks in real time; rank 2 stops issuing ops for 12 s before
// AllReduce #60 while the others wait in it: one HANG naming it within 10 s, then RECOVERED.
TEST(WatchCli, ARankThatStopsIssuingOpsIsAHangNamedWithinTenSeconds) {
  const WatchedJob w("live_hang.json", "0.5", "90");
  ASSERT_EQ(w.driver.exit_code, 0);
  const std::string& run_dir = w.run_dir;
  const ProgramResult& r = w.watch;
  const std::vector<nlohmann::json>& alerts = w.alerts;
  ASSERT_EQ(alerts.size(), 2u) << r.out;
  const nlohmann::json& hang = alerts[0];
  EXPECT_EQ(hang["kind"], "HANG");
  EXPECT_EQ(hang["op"], "AllReduce #60");
  std::vector<int> waiting;
  for (const nlohmann::json& m : hang["waiting"]) waiting.push_back(m["rank"]);
  EXPECT_EQ(waiting, (std::vector<int>{0, 1, 3}));
  ASSERT_EQ(hang["others"].size(), 1u);
  EXPECT_EQ(hang["others"][0]["rank"], 2);
  EXPECT_EQ(hang["others"][0]["last_op"], "AllReduce #59");
  EXPECT_EQ(hang["others"][0]["silent_s"], 0.0) << "rank 2's process lives: its file beats";
  EXPECT_NE(r.out.find("commtrace: HANG AllReduce #60 on world.0: ranks 0,1,3 waiting "), std::string::npos) << r.out;
  const uint64_t onset = testutil::firstArrivalUtc(run_dir, 60);
  ASSERT_NE(onset, UINT64_MAX);
  const auto raised = hang["raised_utc_ns"].get<uint64_t>();
  EXPECT_GT(raised, onset + 5'000'000'000u) << "no sooner than --hang-after";
  EXPECT_LE(raised - onset, 10'000'000'000u) << "raised " << (raised - onset) / 1e9 << " s after the others began waiting";
  std::printf("HANG raised %.2f s after the others began waiting\n", static_cast<double>(raised - onset) / 1e9);
  EXPECT_EQ(alerts[1]["kind"], "RECOVERED");
  EXPECT_EQ(alerts[1]["of"], "HANG");
  EXPECT_NEAR(alerts[1]["waited_s"].get<double>(), 12.0, 2.0);
}

}  // namespace
}  // namespace commtrace
