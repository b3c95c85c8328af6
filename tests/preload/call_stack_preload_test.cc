// Sampled native call stacks end to end: a C++ program whose NCCL calls come from distinct
// functions runs under LD_PRELOAD=libcommtrace.so, and the report, symbolising the frames
// from the program's own file, names the function that issued each op, with its source line
// and the functions that called it.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/commtrace_cli.h"
#include "tests/support/run_program.h"
#include "tests/support/temp_dir.h"
#include "tools/report/analyses/call_stacks.h"
#include "tools/report/load/run_loader.h"

namespace commtrace {
namespace {

using testutil::ProgramResult;
using testutil::TempDir;

using Env = std::map<std::string, std::optional<std::string>>;

// The program under the preload, every op's stack sampled unless `settings` say otherwise.
ProgramResult runPreloaded(const TempDir& scratch, const std::vector<std::string>& argv, Env env) {
  env.emplace("LD_PRELOAD", COMMTRACE_SO_PATH);
  env.emplace("COMMTRACE_DIR", scratch.path() + "/run");
  env.emplace("NCCL_PROFILER_PLUGIN", std::nullopt);
  env.emplace("NVTX_INJECTION64_PATH", std::nullopt);
  return testutil::runProgram(argv, scratch.path(), env);
}

// The run's stacks as the report names them, and its notes on what it could not name.
std::vector<report::CallStackRow> reportedStacks(const TempDir& scratch, std::vector<std::string>* notes = nullptr) {
  report::RunModel run;
  std::ostringstream err;
  EXPECT_TRUE(report::loadRun({.paths = {scratch.path() + "/run"}}, run, err)) << err.str();
  report::NativeSymbols symbols;
  std::vector<report::CallStackRow> rows = report::commByCallStack(run, symbols);
  if (notes != nullptr) *notes = report::pythonFrameNotes(run);
  return rows;
}

std::vector<report::CallStackRow> stacksOf(const TempDir& scratch, const Env& settings, int steps) {
  const ProgramResult r = runPreloaded(scratch, {CALL_SITE_PROGRAM_PATH, std::to_string(steps)}, settings);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "done\n");
  return reportedStacks(scratch);
}

// The function a site names, without its line.
std::string functionOf(const std::string& site) { return site.substr(0, site.find(" (")); }

const report::CallStackRow* rowOf(const std::vector<report::CallStackRow>& rows, const std::string& function) {
  for (const report::CallStackRow& row : rows)
    if (functionOf(row.site).find(function) != std::string::npos) return &row;
  return nullptr;
}

// Every op sampled: each is named by the function that called NCCL, with its line in the
// program's source and the callers above it, outermost first.
TEST(CallStackPreload, EveryOpIsAttributedToTheFunctionThatIssuedIt) {
  TempDir scratch;
  const std::vector<report::CallStackRow> rows = stacksOf(scratch, {{"COMMTRACE_STACKS", "1"}}, 5);
  ASSERT_EQ(rows.size(), 3u) << "syncGradients, gatherParameters, saveCheckpoint";
  const report::CallStackRow* gather = rowOf(rows, "gatherParameters");
  const report::CallStackRow* sync = rowOf(rows, "syncGradients");
  const report::CallStackRow* save = rowOf(rows, "saveCheckpoint");
  ASSERT_TRUE(gather != nullptr && sync != nullptr && save != nullptr) << rows.front().stack;
  EXPECT_EQ(gather->samples, 10u);  // two layers a step, from one call site
  EXPECT_EQ(gather->ops, 10u);
  EXPECT_EQ(sync->samples, 5u);
  EXPECT_EQ(sync->ops, 5u);
  EXPECT_EQ(sync->bytes, 5u * (4u << 16));
  EXPECT_EQ(save->samples, 1u);
  EXPECT_EQ(gather->ranks, 1);
  EXPECT_NE(sync->site.find("call_site_program.cc:"), std::string::npos) << sync->site;
  EXPECT_NE(sync->stack.find("main"), std::string::npos) << sync->stack;
  EXPECT_LT(sync->stack.find("main"), sync->stack.find("trainStep")) << sync->stack;
  EXPECT_LT(sync->stack.find("trainStep"), sync->stack.find("syncGradients")) << sync->stack;
  // The stack ends at the program's function: none of the tracer's frames are in it.
  ASSERT_GT(sync->stack.size(), sync->site.size());
  EXPECT_EQ(sync->stack.substr(sync->stack.size() - sync->site.size()), sync->site) << sync->stack;
  EXPECT_EQ(save->stack.find("trainStep"), std::string::npos) << save->stack;
  // Code without line information (_start, from crt1.o) claims no other function's line.
  EXPECT_EQ(sync->stack.find("std_thread.h"), std::string::npos) << sync->stack;
  EXPECT_DOUBLE_EQ(gather->ops_share, 10.0 / 16.0);
}

// At the default rate (one op in 1,024) a short run's ops are not each sampled, but every
// thread's first op of a communicator, op and size class is: both layers' AllGathers are of
// one size class, the AllReduce of another, the Broadcast on a thread of its own.
TEST(CallStackPreload, AtTheDefaultRateEachKindOfOpIsSampledOnce) {
  TempDir scratch;
  const std::vector<report::CallStackRow> rows = stacksOf(scratch, {}, 200);
  uint64_t samples = 0;
  for (const report::CallStackRow& row : rows) samples += row.samples;
  ASSERT_NE(rowOf(rows, "gatherParameters"), nullptr);
  ASSERT_NE(rowOf(rows, "syncGradients"), nullptr);
  ASSERT_NE(rowOf(rows, "saveCheckpoint"), nullptr);
  EXPECT_GE(samples, 3u);
  EXPECT_LT(samples, 12u) << "601 ops, one in 1,024 sampled besides the three firsts";
}

// Sampled one op in 4 (random intervals), the weights estimate every site's ops: they add
// up to the ops (less the main thread's after its last sample) and split them as the program
// does, two AllGathers to an AllReduce. (A simulation of the sampler puts the AllReduce's
// estimate within 3.2 % of the truth, one standard deviation, at this length. 3,000 steps
// fit the thread's ring, which flat out, 60,000 ops, overflowed: drops, not the estimate.)
TEST(CallStackPreload, TheSamplesWeightsEstimateEachSitesOps) {
  TempDir scratch;
  constexpr int kSteps = 3'000;
  const std::vector<report::CallStackRow> rows = stacksOf(scratch, {{"COMMTRACE_STACKS", "4"}}, kSteps);
  const report::CallStackRow* gather = rowOf(rows, "gatherParameters");
  const report::CallStackRow* sync = rowOf(rows, "syncGradients");
  ASSERT_TRUE(gather != nullptr && sync != nullptr);
  uint64_t samples = 0, ops = 0;
  for (const report::CallStackRow& row : rows) samples += row.samples, ops += row.ops;
  EXPECT_LE(ops, 3u * kSteps + 1);
  EXPECT_GE(ops, 3u * kSteps + 1 - 7) << "an interval is at most 7 ops";
  EXPECT_NEAR(static_cast<double>(samples), 3.0 * kSteps / 4, 3.0 * kSteps / 4 * 0.1);
  EXPECT_NEAR(static_cast<double>(gather->ops), 2.0 * kSteps, 2.0 * kSteps * 0.15);
  EXPECT_NEAR(static_cast<double>(sync->ops), 1.0 * kSteps, 1.0 * kSteps * 0.15);
  EXPECT_NEAR(static_cast<double>(sync->bytes), 1.0 * kSteps * (4 << 16), 1.0 * kSteps * (4 << 16) * 0.15);
}

// `--format folded-stacks` is the flame-graph tools' input: a line per stack, its frames from
// the outermost in, the ops issued from it; the HTML page draws them as an icicle.
TEST(CallStackPreload, TheStacksFoldForFlameGraphToolsAndDrawOnThePage) {
  TempDir scratch;
  const std::vector<report::CallStackRow> rows = stacksOf(scratch, {{"COMMTRACE_STACKS", "1"}}, 5);
  const ProgramResult folded = testutil::commtrace(scratch, {"report", scratch.path() + "/run", "--format", "folded-stacks"});
  ASSERT_EQ(folded.exit_code, 0) << folded.err;
  std::string expected;
  for (const report::CallStackRow& row : rows) expected += row.stack + " " + std::to_string(row.ops) + "\n";
  EXPECT_EQ(folded.out, expected);
  EXPECT_NE(folded.err.find("estimated from the samples"), std::string::npos) << folded.err;
  const ProgramResult page = testutil::commtrace(scratch, {"report", scratch.path() + "/run", "--format", "html"});
  ASSERT_EQ(page.exit_code, 0) << page.err;
  EXPECT_NE(page.out.find("Communication by call stack"), std::string::npos);
  EXPECT_NE(page.out.find("Ops by the native call stack that issued them"), std::string::npos);

  TempDir none;  // nothing sampled: nothing to fold, and stderr says why
  stacksOf(none, {{"COMMTRACE_STACKS", "0"}}, 1);
  const ProgramResult empty = testutil::commtrace(none, {"report", none.path() + "/run", "--format", "folded-stacks"});
  EXPECT_EQ(empty.out, "");
  EXPECT_NE(empty.err.find("no call stack of this run was sampled"), std::string::npos) << empty.err;
}

// A forked child meets the parent's stacks again as its own (it forks inside the loop and
// goes on from the same call sites): its file holds their frames and the modules they lie in,
// so the report names its ops too.
TEST(CallStackPreload, AForkedChildsFileNamesItsOwnStacks) {
  TempDir scratch;
  const ProgramResult r = runPreloaded(scratch, {CALL_SITE_PROGRAM_PATH, "3", "fork"}, {{"COMMTRACE_STACKS", "1"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  report::RunModel run;
  std::ostringstream err;
  ASSERT_TRUE(report::loadRun({.paths = {scratch.path() + "/run"}}, run, err)) << err.str();
  ASSERT_EQ(run.timelines.size(), 2u) << "the parent's file and the child's";
  for (const report::ProcessTimeline& t : run.timelines) {
    uint64_t samples = 0;
    for (const report::StackComm& s : t.comm_by_stack) {
      samples += s.samples;
      ASSERT_FALSE(s.frames.empty());
      EXPECT_NE(s.frames.front().module, 0u) << "the frame's module was recorded in this file";
    }
    EXPECT_GE(samples, 7u);  // after the fork, 2 steps of 3 ops and the checkpoint
  }
}

TEST(CallStackPreload, OffWithCommtraceStacksZero) {
  TempDir scratch;
  EXPECT_TRUE(stacksOf(scratch, {{"COMMTRACE_STACKS", "0"}}, 5).empty());
}

// Code in no module (a JIT's) is named by the perf map the process kept: the recorder copies
// /tmp/perf-PID.map beside the trace, and the report looks the frame up there.
TEST(CallStackPreload, CodeInNoModuleIsNamedByThePerfMapKeptBesideTheTrace) {
  if (std::string(JIT_CALLER_PROGRAM_PATH).empty()) GTEST_SKIP() << "the JIT stand-in's trampoline is x86-64 code";
  TempDir scratch;
  const ProgramResult r = runPreloaded(scratch, {JIT_CALLER_PROGRAM_PATH}, {{"COMMTRACE_STACKS", "1"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(r.out.rfind("pid ", 0), 0u) << r.out;
  std::remove(("/tmp/perf-" + r.out.substr(4, r.out.size() - 5) + ".map").c_str());
  const std::vector<report::CallStackRow> rows = reportedStacks(scratch);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].samples, 3u);
  EXPECT_NE(rows[0].site.find("issueFromJit"), std::string::npos) << rows[0].site;
  // The unwinder stops at code without unwind tables: the JIT's frame is the outermost.
  EXPECT_EQ(rows[0].stack.rfind("py::train_step:/work/train.py;", 0), 0u) << rows[0].stack;
}

// A Python program calling NCCL through a C extension: with a perf map (CPython 3.12+ under
// PYTHONPERFSUPPORT=1) the Python function that called the extension is in the stack; an
// older interpreter keeps none, and the report says why no Python frames are shown.
TEST(CallStackPreload, APythonProgramsFunctionsOrWhyTheyAreMissing) {
  if (std::string(PYTHON3_PATH).empty()) GTEST_SKIP() << "no python3";
  TempDir scratch;
  const ProgramResult r = runPreloaded(scratch, {PYTHON3_PATH, PYTHON_PROGRAM_PATH, PYTHON_EXTENSION_PATH},
                                       {{"COMMTRACE_STACKS", "1"}, {"PYTHONPERFSUPPORT", "1"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "done\n");
  std::vector<std::string> notes;
  const std::vector<report::CallStackRow> rows = reportedStacks(scratch, &notes);
  ASSERT_FALSE(rows.empty());
  const report::CallStackRow* site = rowOf(rows, "allReduceOnce");
  ASSERT_NE(site, nullptr) << rows[0].stack;
  EXPECT_EQ(site->samples, 3u);
  const bool python_frames = site->stack.find("py::") != std::string::npos;
  if (python_frames) {
    EXPECT_NE(site->stack.find("py::all_reduce_gradients"), std::string::npos) << site->stack;
    EXPECT_TRUE(notes.empty()) << notes[0];
  } else {
    ASSERT_EQ(notes.size(), 1u) << site->stack;
    EXPECT_NE(notes[0].find("1 Python process (python3"), std::string::npos) << notes[0];
    EXPECT_NE(notes[0].find("PYTHONPERFSUPPORT=1"), std::string::npos) << notes[0];
  }
}

}  // namespace
}  // namespace commtrace
