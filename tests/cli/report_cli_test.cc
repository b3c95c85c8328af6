// `commtrace report` and `commtrace export --perfetto` as a user runs them: exit 1 with a
// message when nothing can be analysed, 2 for usage errors, and on a run `commtrace demo`
// plays through libcommtrace.so: every format written and well-formed.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <zlib.h>

#include "perfetto_trace_check.pb.h"

#include "tests/support/commtrace_cli.h"
#include "tests/support/run_program.h"
#include "tests/support/temp_dir.h"

namespace commtrace {
namespace {

using testutil::ProgramResult;
using testutil::TempDir;

using testutil::commtrace;

TEST(ReportCli, EmptyDirectoryIsNothingToAnalyse) {
  TempDir scratch, run;
  const ProgramResult r = commtrace(scratch, {"report", run.path()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("commtrace: " + run.path() + " has no trace files"), std::string::npos) << r.err;
}

TEST(ReportCli, MissingDirectoryIsNothingToAnalyse) {
  TempDir scratch;
  const ProgramResult r = commtrace(scratch, {"report", scratch.path() + "/no-such-run"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no such file or directory"), std::string::npos) << r.err;
}

TEST(ReportCli, ForeignFilesAreNothingToAnalyse) {
  TempDir scratch, run;
  std::ofstream(run.path() + "/notes.txt") << "not a trace\n";
  const ProgramResult only_foreign = commtrace(scratch, {"report", run.path()});
  EXPECT_EQ(only_foreign.exit_code, 1);
  EXPECT_NE(only_foreign.err.find("has no trace files"), std::string::npos) << only_foreign.err;

  std::ofstream(run.path() + "/rank0.ctrace") << "PK\x03\x04 a zip file, named like a trace";
  const ProgramResult misnamed = commtrace(scratch, {"report", run.path()});
  EXPECT_EQ(misnamed.exit_code, 1);
  EXPECT_NE(misnamed.err.find(run.path() + "/rank0.ctrace"), std::string::npos) << misnamed.err;
  EXPECT_NE(misnamed.err.find("could be read"), std::string::npos) << misnamed.err;

  const ProgramResult exported = commtrace(scratch, {"export", "--perfetto", run.path(), "--out", scratch.path() + "/t.json"});
  EXPECT_EQ(exported.exit_code, 1);
  EXPECT_FALSE(std::filesystem::exists(scratch.path() + "/t.json"));
}

TEST(ReportCli, UsageErrorsExitTwo) {
  TempDir scratch, run;
  const ProgramResult csv = commtrace(scratch, {"report", run.path(), "--format", "csv"});
  EXPECT_EQ(csv.exit_code, 2);
  EXPECT_NE(csv.err.find("--out DIR"), std::string::npos) << csv.err;
  EXPECT_EQ(commtrace(scratch, {"report", run.path(), "--format", "pdf"}).exit_code, 2);
  EXPECT_EQ(commtrace(scratch, {"report"}).exit_code, 2);
  EXPECT_EQ(commtrace(scratch, {"export", run.path()}).exit_code, 2);  // --perfetto is the one format, and required
  const ProgramResult regex = commtrace(scratch, {"report", run.path(), "--step-range", "iter ["});
  EXPECT_EQ(regex.exit_code, 2);
  EXPECT_NE(regex.err.find("commtrace: --step-range 'iter [' is not a regular expression"), std::string::npos) << regex.err;
  EXPECT_EQ(commtrace(scratch, {"export", "--perfetto", run.path(), "--step-range", "("}).exit_code, 2);
}

// Two jobs (the driver as srun, then as Open MPI's mpirun) write into one directory, as
// jobs do into a COMMTRACE_DIR they share: the report names both and reads one on request.
TEST(ReportCli, FilesOfTwoJobsAreNotMergedUnlessAsked) {
  TempDir scratch;
  const std::string dir = scratch.path() + "/shared";
  for (const char* launcher : {"slurm", "openmpi"}) {
    const ProgramResult job = testutil::runProgram(
        {COMMTRACE_DRIVER, "--scenario", COMMTRACE_SCENARIO_DIR "/tiny.json", "--out", dir, "--plugin", COMMTRACE_SO,
         "--launcher", launcher},
        scratch.path(), {{"COMMTRACE_DIR", std::nullopt}, {"NCCL_PROFILER_PLUGIN", std::nullopt}});
    ASSERT_EQ(job.exit_code, 0) << job.err;
  }
  const ProgramResult mixed = commtrace(scratch, {"report", dir});
  EXPECT_EQ(mixed.exit_code, 1);
  EXPECT_NE(mixed.err.find("these files come from 2 jobs"), std::string::npos) << mixed.err;
  EXPECT_NE(mixed.err.find("  4242: "), std::string::npos) << mixed.err;
  EXPECT_NE(mixed.err.find("  prterun-commtrace-4242@1: "), std::string::npos) << mixed.err;

  const ProgramResult one = commtrace(scratch, {"report", dir, "--job", "4242", "--format", "json"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const auto run = nlohmann::json::parse(one.out)["run"];
  EXPECT_EQ(run["jobs"], nlohmann::json::array({"4242"}));
  EXPECT_GT(run["processes"].get<int>(), 0);

  const ProgramResult both = commtrace(scratch, {"export", "--perfetto", dir, "--job", "all", "--out", scratch.path() + "/t.json"});
  EXPECT_EQ(both.exit_code, 0) << both.err;
  // Both jobs have ranks 0-3: merged, each is two processes (it was said nowhere).
  EXPECT_NE(both.err.find("commtrace: --job all reads 2 jobs as one run, and they share rank numbers (rank 0 is in job "), std::string::npos)
      << both.err;
}

// One demo run shared by the tests below: 8 ranks on 2 nodes through the real capture library.
class ReportCliOnDemo : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    scratch_ = new TempDir;
    const ProgramResult demo = commtrace(*scratch_, {"demo", "--dir", runDir()});
    ASSERT_EQ(demo.exit_code, 0) << demo.err;
  }
  static void TearDownTestSuite() {
    delete scratch_;
    scratch_ = nullptr;
  }
  static std::string runDir() { return scratch_->path() + "/run"; }
  static ProgramResult run(std::vector<std::string> args) { return commtrace(*scratch_, std::move(args)); }
  static TempDir* scratch_;
};
TempDir* ReportCliOnDemo::scratch_ = nullptr;

TEST_F(ReportCliOnDemo, TextStartsWithTheFindings) {
  const ProgramResult r = run({"report", runDir()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> lines = testutil::linesOf(r.out);
  ASSERT_GT(lines.size(), 10u);
  EXPECT_EQ(lines[0], "Findings");
  EXPECT_EQ(lines[1].rfind("  1. ", 0), 0u);
  EXPECT_NE(r.out.find("\nRun " + runDir() + "\n"), std::string::npos);
  EXPECT_NE(r.out.find("\nOverlap"), std::string::npos);
  EXPECT_EQ(r.err, "");  // stderr is not a terminal here: no progress line
}

TEST_F(ReportCliOnDemo, JsonIsValidAndComplete) {
  const ProgramResult r = run({"report", runDir(), "--format", "json", "--progress", "never"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("schema"), "commtrace.report.v1");
  EXPECT_EQ(j.at("run").at("ranks"), 8);
  EXPECT_EQ(j.at("run").at("files"), 8);
  for (const char* key : {"communicators", "bandwidth", "overlap", "stragglers", "mismatches"}) EXPECT_TRUE(j.at(key).is_array()) << key;
  EXPECT_EQ(j.at("matrix").at("bytes").size(), 8u);
  EXPECT_EQ(j.at("overlap").size(), 8u);
  for (const nlohmann::json& o : j.at("overlap")) {  // the driver's CUPTI reports its kernels
    EXPECT_EQ(o.at("available"), true);
    EXPECT_GT(o.at("overlapped_us").get<double>(), 0.0);
    EXPECT_EQ(o.at("kernel_clock").at("matched"), o.at("kernel_clock").at("nccl_kernels"));
    EXPECT_EQ(o.at("step_source"), "nvtx");  // demo.json's train_step ranges
    EXPECT_EQ(o.at("steps").size(), 20u);  // demo.json plays 20 steps
  }
}

// A time of day a moment before the run's first op is the run's day: it read as the next day,
// and the window held nothing with exit status 0. A window that holds no op says so and
// exits 1, the report still written.
TEST_F(ReportCliOnDemo, ATimeOfDayIsTheRunsDayAndAnEmptyWindowExitsOne) {
  const ProgramResult whole = run({"report", runDir(), "--format", "json"});
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  const nlohmann::json run_json = nlohmann::json::parse(whole.out).at("run");
  const std::string first_op = run_json.at("first_op_utc");  // 2026-11-29T05:18:03.979123Z
  const std::string second = first_op.substr(11, 8);           // 05:18:03, before the first op
  const ProgramResult from = run({"report", runDir(), "--format", "json", "--from", second});
  ASSERT_EQ(from.exit_code, 0) << from.err;
  EXPECT_EQ(nlohmann::json::parse(from.out).at("run").at("ops"), run_json.at("ops")) << "every op is after " << second;

  const ProgramResult empty = run({"report", runDir(), "--from", "1000s"});
  EXPECT_EQ(empty.exit_code, 1);
  EXPECT_NE(empty.err.find("commtrace: No op started in the --from/--to window; the run's ops ran from "), std::string::npos) << empty.err;
  EXPECT_NE(empty.out.find("No op started in the --from/--to window"), std::string::npos) << "the report is still written";
}

// The demo's run agrees with itself on every clock: its span is its 20 steps of 27.6 ms, and
// steps 5 to 10 hold 5 steps' ops (played unpaced, the span read 25 ms and the steps 80 ops).
TEST_F(ReportCliOnDemo, TheDemoRunIsTheSameRunOnEveryClock) {
  const ProgramResult whole = run({"report", runDir(), "--format", "json"});
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  EXPECT_NE(whole.out.find("\"step_source\": \"nvtx\""), std::string::npos);
  const ProgramResult text = run({"report", runDir()});
  const size_t at = text.out.find("\n  time ");
  ASSERT_NE(at, std::string::npos) << text.out;
  const std::string time_line = text.out.substr(at, text.out.find('\n', at + 1) - at);
  const size_t open = time_line.rfind('('), ms = time_line.rfind(" ms)");
  ASSERT_NE(ms, std::string::npos) << time_line;
  EXPECT_GT(std::stod(time_line.substr(open + 1, ms - open - 1)), 20 * 27.0) << time_line;
  const ProgramResult steps = run({"report", runDir(), "--format", "json", "--from", "step:5", "--to", "step:10"});
  ASSERT_EQ(steps.exit_code, 0) << steps.err;
  const double all_ops = nlohmann::json::parse(whole.out).at("run").at("ops");
  EXPECT_NEAR(nlohmann::json::parse(steps.out).at("run").at("ops").get<double>(), all_ops / 4.0, all_ops / 40.0) << "5 of 20 steps";
}

// A --step-range that names no range was ignored without a word.
TEST_F(ReportCliOnDemo, AStepRangeThatMatchesNothingIsSaid) {
  const ProgramResult r = run({"report", runDir(), "--format", "json", "--step-range", "no such step"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("commtrace: --step-range 'no such step' matches no NVTX range of this run"), std::string::npos) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out).at("overlap").at(0).at("step_source"), "inferred");
}

TEST_F(ReportCliOnDemo, ProgressGoesToStderrWhenAsked) {
  const ProgramResult shown = run({"report", runDir(), "--format", "json", "--progress", "always"});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_NE(shown.err.find("commtrace: reading 8 files, 8 done"), std::string::npos) << shown.err;
  // The second pass, overlap reading each file on its own, has its own line.
  EXPECT_NE(shown.err.find("commtrace: overlap: re-reading 8 files, 8 done"), std::string::npos) << shown.err;
  EXPECT_EQ(nlohmann::json::parse(shown.out).at("schema"), "commtrace.report.v1");  // stdout stays clean
  EXPECT_EQ(run({"report", runDir(), "--progress", "never"}).err, "");
}

TEST_F(ReportCliOnDemo, WritesFilesWithOut) {
  const std::string html = scratch_->path() + "/report.html", csv = scratch_->path() + "/csv";
  ASSERT_EQ(run({"report", runDir(), "--format", "html", "--out", html}).exit_code, 0);
  const std::string page = testutil::readText(html);
  EXPECT_NE(page.find("<svg"), std::string::npos);
  EXPECT_EQ(page.find("https://"), std::string::npos);
  ASSERT_EQ(run({"report", runDir(), "--format", "csv", "--out", csv}).exit_code, 0);
  EXPECT_EQ(testutil::linesOf(testutil::readText(csv + "/stragglers.csv")).size(), 1u + 8u);

  // Without --format, a file named .html or .json gets that format (text went into r.html).
  const std::string by_name = scratch_->path() + "/by-name.HTML", json = scratch_->path() + "/by-name.json";
  ASSERT_EQ(run({"report", runDir(), "--out", by_name}).exit_code, 0);
  EXPECT_NE(testutil::readText(by_name).find("<svg"), std::string::npos);
  ASSERT_EQ(run({"report", runDir(), "--out", json}).exit_code, 0);
  EXPECT_EQ(nlohmann::json::parse(testutil::readText(json)).at("schema"), "commtrace.report.v1");
  ASSERT_EQ(run({"report", runDir(), "--format", "text", "--out", by_name}).exit_code, 0);
  EXPECT_EQ(testutil::readText(by_name).rfind("Findings", 0), 0u) << "--format, when given, wins";

  const ProgramResult unwritable = run({"report", runDir(), "--format", "json", "--out", scratch_->path() + "/no/such/dir/r.json"});
  EXPECT_EQ(unwritable.exit_code, 1);
  EXPECT_NE(unwritable.err.find("commtrace: " + scratch_->path() + "/no/such/dir/r.json"), std::string::npos) << unwritable.err;
}

// Every process's slices in the JSON spelling, and only the ranks asked for.
std::set<int> slicePids(const std::string& json_path, size_t* slices = nullptr) {
  const nlohmann::json t = nlohmann::json::parse(testutil::readText(json_path));
  std::set<int> pids;
  for (const nlohmann::json& e : t.at("traceEvents"))
    if (e.at("ph") == "X") {
      pids.insert(e.at("pid").get<int>());
      if (slices != nullptr) ++*slices;
    }
  return pids;
}

TEST_F(ReportCliOnDemo, ExportsAPerfettoTraceAsJson) {
  const std::string trace = scratch_->path() + "/trace.json";
  const ProgramResult r = run({"export", "--perfetto", runDir(), "--out", trace, "--format", "json", "--compress", "none"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Wrote " + trace), std::string::npos);
  size_t slices = 0;
  EXPECT_EQ(slicePids(trace, &slices), (std::set<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_GT(slices, 0u);
}

// The default: Perfetto's protobuf, gzipped, next to the run, with flows.
TEST_F(ReportCliOnDemo, ExportDefaultsToAGzippedProtobufNextToTheRun) {
  const ProgramResult r = run({"export", "--perfetto", runDir() + "/"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string path = runDir() + ".perfetto-trace.gz";
  EXPECT_NE(r.out.find("Wrote " + path + ": "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" ops joined across ranks by flow arrows"), std::string::npos) << r.out;
  gzFile gz = gzopen(path.c_str(), "rb");
  ASSERT_NE(gz, nullptr);
  std::string bytes;
  char buffer[1 << 16];
  for (int n; (n = gzread(gz, buffer, sizeof buffer)) > 0;) bytes.append(buffer, static_cast<size_t>(n));
  gzclose(gz);
  commtrace::perfetto_check::Trace trace;
  ASSERT_TRUE(trace.ParseFromString(bytes));
  std::set<int> pids;
  std::map<std::pair<uint32_t, uint64_t>, std::string> categories;  // interned per sequence
  size_t ops = 0, with_flow = 0;
  for (const auto& p : trace.packet()) {
    if (p.has_track_descriptor() && p.track_descriptor().has_process()) pids.insert(p.track_descriptor().process().pid());
    for (const auto& c : p.interned_data().event_categories()) categories[{p.trusted_packet_sequence_id(), c.iid()}] = c.name();
    const auto& event = p.track_event();
    if (event.type() != commtrace::perfetto_check::TrackEvent::TYPE_SLICE_BEGIN || event.category_iids_size() == 0) continue;
    const std::string& category = categories[{p.trusted_packet_sequence_id(), event.category_iids(0)}];
    if (category != "collective" && category != "p2p") continue;  // compute kernels and NVTX ranges have no flows
    ++ops;
    with_flow += event.flow_ids_size() > 0;
  }
  EXPECT_EQ(pids, (std::set<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_GT(ops, 1000u);
  EXPECT_EQ(with_flow, ops) << "every op of the healthy demo is joined to its peers";
}

// A *.ctrace that is not a trace is left out of the export, and said so (report lists it
// among its problems; export said nothing).
TEST_F(ReportCliOnDemo, ExportNamesTheFilesItLeavesOut) {
  const std::string dir = scratch_->path() + "/with-junk";
  std::filesystem::copy(runDir(), dir, std::filesystem::copy_options::recursive);
  std::ofstream(dir + "/junk.ctrace") << "PK\x03\x04 a zip file, named like a trace";
  const ProgramResult r = run({"export", "--perfetto", dir, "--out", scratch_->path() + "/junk.json", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("commtrace: " + dir + "/junk.ctrace is not a commtrace trace"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(left out of the export)"), std::string::npos) << r.err;
}

TEST_F(ReportCliOnDemo, ExportFiltersByRankAndTime) {
  const std::string trace = scratch_->path() + "/ranks.json";
  const ProgramResult r =
      run({"export", "--perfetto", runDir(), "--out", trace, "--format", "json", "--compress", "none", "--ranks", "1-2,6"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(slicePids(trace), (std::set<int>{1, 2, 6}));
  EXPECT_NE(r.out.find(" tracks of 3 of 8 processes"), std::string::npos) << r.out;

  // A selection that keeps nothing exits 1, as the README says (it exited 0 with an empty trace).
  for (const std::vector<std::string>& nothing : std::vector<std::vector<std::string>>{{"--from", "1000s"}, {"--ranks", "9-12"}, {"--steps", "100-102"}}) {
    std::vector<std::string> args = {"export", "--perfetto", runDir(), "--out", trace};
    args.insert(args.end(), nothing.begin(), nothing.end());
    const ProgramResult none = run(args);
    EXPECT_EQ(none.exit_code, 1) << nothing[0] << " " << nothing[1] << ": " << none.out << none.err;
    EXPECT_NE(none.err.find("commtrace: nothing was kept: --ranks, --steps, --from or --to select no slice"), std::string::npos) << none.err;
  }

  for (const std::vector<std::string>& bad : std::vector<std::vector<std::string>>{
           {"--ranks", "x"}, {"--steps", "3-1"}, {"--from", "5"}, {"--from", "2s", "--to", "1s"}}) {
    std::vector<std::string> args = {"export", "--perfetto", runDir(), "--out", trace};
    args.insert(args.end(), bad.begin(), bad.end());
    const ProgramResult usage = run(args);
    EXPECT_EQ(usage.exit_code, 2) << bad[0];
    EXPECT_EQ(usage.err.rfind("commtrace: ", 0), 0u) << usage.err;
  }
}

}  // namespace
}  // namespace commtrace
