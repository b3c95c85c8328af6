// `commtrace report` and `export` on PyTorch profiler (Kineto) traces: HTA's public samples
// (tests/data/hta-samples). The overlap per rank must be what HTA's definition gives,
// computed independently by overlap_reference.py; steps are PyTorch's ProfilerStep#N; the
// NCCL metadata PyTorch adds gives sizes, datatypes and process groups.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/support/run_program.h"
#include "tests/support/temp_dir.h"

namespace commtrace {
namespace {

using nlohmann::json;
using testutil::ProgramResult;
using testutil::TempDir;

const std::string kSamples = HTA_SAMPLES_DIR;

ProgramResult run(const TempDir& scratch, std::vector<std::string> argv) { return testutil::runProgram(std::move(argv), scratch.path()); }

json report(const TempDir& scratch, const std::string& path) {
  const ProgramResult r = run(scratch, {COMMTRACE_CLI, "report", path, "--format", "json", "--progress", "never"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json::parse(r.out);
}

std::vector<std::string> traces(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

void expectHtasOverlap(const std::string& dir, size_t steps) {
  TempDir scratch;
  const json r = report(scratch, dir);
  std::vector<std::string> reference_argv = {PYTHON3, kSamples + "/overlap_reference.py"};
  for (const std::string& f : traces(dir)) reference_argv.push_back(f);
  const ProgramResult ref = run(scratch, reference_argv);
  ASSERT_EQ(ref.exit_code, 0) << ref.err;
  const json expected = json::parse(ref.out);
  ASSERT_EQ(r.at("overlap").size(), expected.size());
  for (const json& row : r.at("overlap")) {
    const json& want = expected.at(std::to_string(row.at("rank").get<int>()));
    ASSERT_TRUE(row.at("available").get<bool>()) << row.dump();
    EXPECT_NEAR(row.at("comm_us").get<double>(), want.at("comm_us").get<double>(), 0.01) << dir;
    EXPECT_NEAR(row.at("overlapped_us").get<double>(), want.at("overlapped_us").get<double>(), 0.01) << dir;
    EXPECT_EQ(row.at("step_source"), "nvtx") << dir << ": ProfilerStep#N";
    EXPECT_EQ(row.at("steps").size(), steps) << dir;
  }
  EXPECT_TRUE(r.at("mismatches").empty()) << "one rank's view never calls the other seats missing";
}

TEST(KinetoInput, OverlapOfTwoRanksIsHtasDefinition) { expectHtasOverlap(kSamples + "/trace_filter", 2); }

TEST(KinetoInput, OverlapOfOneRankWithNcclMetadataIsHtasDefinition) { expectHtasOverlap(kSamples + "/nccl_parser_config", 3); }

TEST(KinetoInput, NcclMetadataGivesSizesGroupsAndBusBandwidth) {
  TempDir scratch;
  const json r = report(scratch, kSamples + "/nccl_parser_config/nccl_data.json.gz");
  ASSERT_EQ(r.at("communicators").size(), 1u);
  EXPECT_EQ(r.at("communicators")[0].at("name"), "pg 0 (default_pg)");
  EXPECT_EQ(r.at("communicators")[0].at("size"), 2);
  uint64_t all_reduces = 0, broadcasts = 0;
  for (const json& b : r.at("bandwidth")) {
    if (b.at("func") == "AllReduce") {
      all_reduces += b.at("count").get<uint64_t>();
      EXPECT_EQ(b.at("algo"), "RING");
      EXPECT_EQ(b.at("proto"), "LL");
      // n = 2: busBw = algBw x 2(n-1)/n = algBw.
      EXPECT_DOUBLE_EQ(b.at("busbw_gbs_p50").get<double>(), b.at("algbw_gbs_p50").get<double>());
    }
    if (b.at("func") == "Broadcast") broadcasts += b.at("count").get<uint64_t>();
  }
  EXPECT_EQ(all_reduces, 15u);
  EXPECT_EQ(broadcasts, 6u);
  const json& types = r.at("kernels").at("types");
  ASSERT_EQ(types.size(), 1u);
  EXPECT_GT(types[0].at("computation_us").get<double>(), 0);
  EXPECT_GT(types[0].at("memory_us").get<double>(), 0);
}

TEST(KinetoInput, ExportDrawsTheKernelsAndTheNcclOps) {
  TempDir scratch;
  const std::string out = scratch.path() + "/t.json";
  const ProgramResult r = run(scratch, {COMMTRACE_CLI, "export", "--perfetto", kSamples + "/trace_filter", "--format", "json",
                                        "--compress", "none", "--out", out, "--progress", "never"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json trace = json::parse(testutil::readText(out));
  size_t nccl = 0, compute = 0;
  for (const json& e : trace.at("traceEvents")) {
    if (e.value("ph", "") != "X") continue;
    nccl += e.value("name", "") == "SendRecv";
    compute += e.value("cat", "") == "compute";
  }
  EXPECT_EQ(nccl, 20u);
  EXPECT_GT(compute, 1000u);
}

TEST(KinetoInput, FilesThatAreNotProfilerTracesAreNamed) {
  TempDir scratch;
  const std::string bad = scratch.path() + "/notes.json";
  std::ofstream(bad) << R"({"hello": 1})";
  const ProgramResult r = run(scratch, {COMMTRACE_CLI, "report", bad, "--progress", "never"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("notes.json: JSON, but not a PyTorch profiler trace (no traceEvents)"), std::string::npos) << r.err;
}

// A trace with a field of the wrong type is named and left out; the others are reported.
TEST(KinetoInput, ATraceWithAMalformedEventIsLeftOutAndNamed) {
  TempDir scratch;
  std::filesystem::copy_file(kSamples + "/nccl_parser_config/nccl_data.json.gz", scratch.path() + "/good.json.gz");
  std::ofstream(scratch.path() + "/bad.json")
      << R"({"distributedInfo": {"rank": 1}, "traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": "soon", "dur": 1}]})";
  const ProgramResult r = run(scratch, {COMMTRACE_CLI, "report", scratch.path(), "--format", "json", "--progress", "never"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json report = json::parse(r.out);
  EXPECT_EQ(report.at("run").at("files"), 2);
  EXPECT_EQ(report.at("overlap").size(), 1u);
  bool named = false;
  for (const json& p : report.at("run").at("problems")) named = named || p.get<std::string>().find("bad.json: not read as a PyTorch profiler trace") != std::string::npos;
  EXPECT_TRUE(named) << report.at("run").dump();
}

}  // namespace
}  // namespace commtrace
