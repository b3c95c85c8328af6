// Golden copies: what commtrace writes for fixed runs, kept in tests/golden/ and held to the
// byte, so that a refactoring that should change nothing changes nothing. The runs: the
// demo's and four NCCL driver scenarios' files as played once (pipeline sends and
// receives, ZeRO-3 gathers under compute, a slow ring link, and ZeRO-3 with a rank killed at
// step 60: its file left open, its ops after it mismatches), and a synthetic mixed run and
// its healthy twin that commtrace-synth writes the same every time. The outputs: the report
// in every format, the Perfetto export, the diff of the twin and the run, and what `watch`
// prints, appends to alerts.jsonl and writes for Prometheus (less each alert's
// raised_utc_ns: when the alert was raised, a wall-clock time).
//
// A change meant to change an output fails here until the copies are written again and the
// difference read:  COMMTRACE_UPDATE_GOLDEN=1 ctest -R Golden; git diff tests/golden
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/commtrace_cli.h"
#include "tests/support/run_program.h"
#include "tests/support/temp_dir.h"

namespace commtrace {
namespace {

namespace fs = std::filesystem;
using testutil::commtrace;
using testutil::ProgramResult;
using testutil::TempDir;

bool updating() {
  const char* v = std::getenv("COMMTRACE_UPDATE_GOLDEN");
  return v != nullptr && *v != '\0' && std::string(v) != "0";
}

std::string contentsOf(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// Where two texts first differ, as a line number and the two lines.
std::string firstDifference(const std::string& expected, const std::string& actual) {
  std::istringstream e(expected), a(actual);
  std::string el, al;
  for (int line = 1;; ++line) {
    const bool more_e = static_cast<bool>(std::getline(e, el)), more_a = static_cast<bool>(std::getline(a, al));
    if (!more_e && !more_a) return "the same lines, other bytes";
    if (el != al || more_e != more_a)
      return "line " + std::to_string(line) + "\n  golden: " + (more_e ? el.substr(0, 300) : "(ended)") + "\n  now:    " +
             (more_a ? al.substr(0, 300) : "(ended)");
  }
}

// Holds `actual` to the golden copy at `path`, or writes it there when updating.
void expectGolden(const fs::path& path, const std::string& actual) {
  if (updating()) {
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << actual;
    return;
  }
  ASSERT_TRUE(fs::exists(path)) << path << " has no golden copy: COMMTRACE_UPDATE_GOLDEN=1 ctest -R Golden";
  const std::string expected = contentsOf(path);
  EXPECT_TRUE(expected == actual) << path << " differs from its golden copy at " << firstDifference(expected, actual)
                                  << "\nIf meant: COMMTRACE_UPDATE_GOLDEN=1 ctest -R Golden, then read git diff tests/golden";
}

// A directory of outputs (the CSV tables): the same files, each the same.
void expectGoldenDirectory(const fs::path& golden, const fs::path& actual) {
  std::vector<std::string> names, golden_names;
  for (const auto& entry : fs::directory_iterator(actual)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  if (updating()) {
    fs::remove_all(golden);
  } else if (fs::exists(golden)) {
    for (const auto& entry : fs::directory_iterator(golden)) golden_names.push_back(entry.path().filename().string());
  }
  std::sort(golden_names.begin(), golden_names.end());
  if (!updating()) {
    EXPECT_EQ(names, golden_names) << golden;
  }
  for (const std::string& name : names) expectGolden(golden / name, contentsOf(actual / name));
}

std::string stdoutOf(const TempDir& scratch, const std::vector<std::string>& args) {
  const ProgramResult r = commtrace(scratch, args);
  EXPECT_EQ(r.exit_code, 0) << "commtrace " << args[0] << ": " << r.err;
  return r.out;
}

void ran(const TempDir& scratch, const std::vector<std::string>& args) {
  const ProgramResult r = commtrace(scratch, args);
  EXPECT_EQ(r.exit_code, 0) << "commtrace " << args[0] << ": " << r.err;
}

// The report in each format and the Perfetto export of scratch/run, against golden/CASE/.
void expectGoldenReports(const TempDir& scratch, const fs::path& golden) {
  const fs::path out(scratch.path());
  expectGolden(golden / "report.txt", stdoutOf(scratch, {"report", "run"}));
  expectGolden(golden / "report.json", stdoutOf(scratch, {"report", "run", "--format", "json"}));
  ran(scratch, {"report", "run", "--format", "html", "--out", "report.html"});
  expectGolden(golden / "report.html", contentsOf(out / "report.html"));
  ran(scratch, {"report", "run", "--out", "report.md"});  // the format from the file's name
  expectGolden(golden / "report.md", contentsOf(out / "report.md"));
  expectGolden(golden / "report.folded", stdoutOf(scratch, {"report", "run", "--format", "folded"}));
  ran(scratch, {"report", "run", "--format", "csv", "--out", "csv"});
  expectGoldenDirectory(golden / "csv", out / "csv");
  ran(scratch, {"export", "run", "--perfetto", "--compress", "none", "--out", "run.perfetto-trace"});
  expectGolden(golden / "export.perfetto-trace", contentsOf(out / "run.perfetto-trace"));
}

// The commands run in the scratch directory, as a user in the run's parent would: the
// outputs name the run "run", wherever the test ran; and at one time (SOURCE_DATE_EPOCH:
// 2026-06-01), so that a file left open was last written as long before the report.
class InScratch {
 public:
  explicit InScratch(const TempDir& scratch) : before_(fs::current_path()) {
    fs::current_path(scratch.path());
    setenv("SOURCE_DATE_EPOCH", "1780272000", 1);
  }
  ~InScratch() {
    fs::current_path(before_);
    unsetenv("SOURCE_DATE_EPOCH");
  }

 private:
  fs::path before_;
};

class GoldenPlayed : public ::testing::TestWithParam<const char*> {};

TEST_P(GoldenPlayed, ReportsAndExportAreTheGoldenCopies) {
  const fs::path golden = fs::path(COMMTRACE_GOLDEN_DIR) / GetParam();
  TempDir scratch;
  const InScratch here(scratch);
  fs::copy(golden / "run", fs::path(scratch.path()) / "run");
  // A file left open is judged by when it was last written: long ago, whenever the test runs.
  const auto long_ago = std::chrono::file_clock::from_sys(std::chrono::sys_seconds{std::chrono::sys_days{std::chrono::January / 1 / 2026}});
  for (const auto& file : fs::directory_iterator(fs::path(scratch.path()) / "run")) fs::last_write_time(file.path(), long_ago);
  expectGoldenReports(scratch, golden);
}

INSTANTIATE_TEST_SUITE_P(Runs, GoldenPlayed, ::testing::Values("demo", "pipeline", "zero3", "ring_slow_link", "killed"));

// alerts.jsonl without each line's raised_utc_ns.
std::string alertsWithoutWallClock(const fs::path& path) {
  std::istringstream in(contentsOf(path));
  std::string out;
  for (std::string line; std::getline(in, line);) {
    nlohmann::json alert = nlohmann::json::parse(line);
    EXPECT_TRUE(alert.contains("raised_utc_ns")) << line;
    alert.erase("raised_utc_ns");
    out += alert.dump() + '\n';
  }
  return out;
}

TEST(GoldenSynthetic, ReportsExportDiffAndAlertsAreTheGoldenCopies) {
  const fs::path golden = fs::path(COMMTRACE_GOLDEN_DIR) / "synthetic";
  TempDir scratch;
  const InScratch here(scratch);
  const std::vector<std::string> shape = {"--ranks", "8", "--ranks-per-node", "4", "--collectives", "300"};
  for (const auto& [dir, straggler] : {std::pair{"run", "3"}, std::pair{"healthy", "-1"}}) {
    std::vector<std::string> args = {COMMTRACE_SYNTH, "--run-dir", dir, "--straggler-rank", straggler};
    args.insert(args.end(), shape.begin(), shape.end());
    ASSERT_EQ(testutil::runProgram(args, scratch.path()).exit_code, 0) << dir;
  }
  expectGoldenReports(scratch, golden);
  expectGolden(golden / "diff.txt", stdoutOf(scratch, {"diff", "healthy", "run"}));
  expectGolden(golden / "diff.json", stdoutOf(scratch, {"diff", "healthy", "run", "--format", "json"}));
  fs::create_directories(fs::path(scratch.path()) / "prom");
  const std::string watched =
      stdoutOf(scratch, {"watch", "run", "--interval", "0.05", "--window", "0.1", "--alerts", "alerts.jsonl", "--prom-dir", "prom"});
  EXPECT_NE(watched.find("STRAGGLER rank 3"), std::string::npos) << watched;
  expectGolden(golden / "watch.txt", watched);
  expectGolden(golden / "alerts.jsonl", alertsWithoutWallClock(fs::path(scratch.path()) / "alerts.jsonl"));
  expectGolden(golden / "commtrace.prom", contentsOf(fs::path(scratch.path()) / "prom" / "commtrace.prom"));
}

}  // namespace
}  // namespace commtrace
