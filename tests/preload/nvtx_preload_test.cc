// The NVTX face end to end: a program using NVTX3's header-only implementation runs under
// LD_PRELOAD=libcommtrace.so; the constructor points NVTX_INJECTION64_PATH at the library,
// NVTX loads it as its injection, and the trace file must hold every range and mark with
// its name, domain, category and nesting, while the program runs as it would without us.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cupti/nvtx_face.h"
#include "tools/report/analyses/call_paths.h"
#include "tools/report/load/run_loader.h"
#include "core/record.h"
#include "sink/reader.h"
#include "tests/support/run_program.h"
#include "tests/support/sink_test_support.h"
#include "tests/support/temp_dir.h"

namespace commtrace {
namespace {

using testutil::ProgramResult;
using testutil::TempDir;

struct Range {
  std::string name, domain;
  uint32_t category = 0;
  uint16_t depth = 0;
  uint64_t start = 0, end = 0;
};

std::vector<Range> rangesIn(const std::string& dir) {
  std::vector<Range> out;
  for (const std::string& file : testing::traceFilesIn(dir)) {
    const testing::ReadBack r = testing::readTrace(file);
    EXPECT_TRUE(r.opened) << r.error;
    for (const DecodedChunk& chunk : r.chunks)
      for (const RecordSlot& s : chunk.records) {
        if (s.kind != RecordKind::kPhaseRange) continue;
        const PhaseRangeRecord& p = s.payload.phase_range;
        out.push_back({std::string(r.reader->str(p.name)), std::string(r.reader->str(p.domain)), p.category, p.depth,
                       p.cpu_start_ns, p.cpu_end_ns});
      }
  }
  return out;
}

size_t count(const std::vector<Range>& ranges, const std::string& name, uint16_t depth) {
  return static_cast<size_t>(std::count_if(ranges.begin(), ranges.end(), [&](const Range& r) { return r.name == name && r.depth == depth; }));
}

ProgramResult runNvtxProgram(const TempDir& scratch, std::map<std::string, std::optional<std::string>> env,
                             const char* program = NVTX_PROGRAM_PATH) {
  env.emplace("LD_PRELOAD", COMMTRACE_SO_PATH);
  env.emplace("COMMTRACE_DIR", scratch.path() + "/run");
  env.emplace("NVTX_INJECTION64_PATH", std::nullopt);
  env.emplace("NCCL_PROFILER_PLUGIN", std::nullopt);
  return testutil::runProgram({program}, scratch.path(), env);
}

// The ops of a run by NVTX path: path -> ops.
std::map<std::string, uint64_t> opsByPath(const std::string& dir) {
  report::RunModel run;
  std::ostringstream err;
  EXPECT_TRUE(report::loadRun({.paths = {dir}}, run, err)) << err.str();
  std::map<std::string, uint64_t> ops;
  for (const report::CallPathRow& row : report::commByCallPath(run)) ops[row.path] = row.ops;
  return ops;
}

TEST(NvtxPreload, EveryRangeAndMarkOfARealNvtxProgramIsRecorded) {
  TempDir scratch;
  const ProgramResult r = runNvtxProgram(scratch, {});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "done\n");
  const std::vector<Range> ranges = rangesIn(scratch.path() + "/run");
  ASSERT_EQ(ranges.size(), 3u * 4 + 3) << "3 steps of (step, forward, backward, loss), AllReduce, data loading, grüße";
  for (int step = 0; step < 3; ++step) EXPECT_EQ(count(ranges, "ProfilerStep#" + std::to_string(step), 0), 1u) << step;
  EXPECT_EQ(count(ranges, "forward", 1), 3u);
  EXPECT_EQ(count(ranges, "backward", 1), 3u);
  EXPECT_EQ(count(ranges, "loss", nvtx::kMark), 3u);
  EXPECT_EQ(count(ranges, "data loading", nvtx::kUnnested), 1u);
  EXPECT_EQ(count(ranges, "gr\xc3\xbc\xc3\x9f" "e", 0), 1u);
  const auto allreduce = std::find_if(ranges.begin(), ranges.end(), [](const Range& x) { return x.name == "AllReduce"; });
  ASSERT_NE(allreduce, ranges.end());
  EXPECT_EQ(allreduce->domain, "NCCL");
  EXPECT_EQ(allreduce->category, 7u);
  EXPECT_EQ(allreduce->depth, 0);
  for (const Range& x : ranges) {
    EXPECT_LE(x.start, x.end) << x.name;
    if (x.depth == nvtx::kMark) {
      EXPECT_EQ(x.start, x.end) << x.name;
    }
  }
  // A step encloses its forward and backward.
  const auto step0 = std::find_if(ranges.begin(), ranges.end(), [](const Range& x) { return x.name == "ProfilerStep#0"; });
  const auto fwd0 = std::find_if(ranges.begin(), ranges.end(), [](const Range& x) { return x.name == "forward"; });
  EXPECT_LE(step0->start, fwd0->start);
  EXPECT_GE(step0->end, fwd0->end);
}

// Every op carries the NVTX ranges open on the thread that issued it: the steps folded into
// one, NCCL's own range around its call left out, another thread's ranges its own.
TEST(NvtxPreload, EachOpIsAttributedToTheNvtxPathItWasIssuedUnder) {
  TempDir scratch;
  const ProgramResult r = runNvtxProgram(scratch, {}, NVTX_NCCL_PROGRAM_PATH);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "done\n");
  const std::map<std::string, uint64_t> expected{{"train_step # / forward / layers.0", 3},
                                                 {"train_step # / forward / layers.1", 3},
                                                 {"train_step # / backward / layers.1", 3},
                                                 {"train_step # / backward / layers.0", 3},
                                                 {"train_step # / backward", 3},
                                                 {"checkpoint", 1},
                                                 {"(no NVTX range)", 1}};
  EXPECT_EQ(opsByPath(scratch.path() + "/run"), expected);

  TempDir off;  // without NVTX recording no op has a path, and the table is empty
  ASSERT_EQ(runNvtxProgram(off, {{"COMMTRACE_NVTX", "0"}}, NVTX_NCCL_PROGRAM_PATH).exit_code, 0);
  EXPECT_TRUE(opsByPath(off.path() + "/run").empty());
}

// The first preloaded process points both NCCL and NVTX here, in one line.
TEST(NvtxPreload, TheConstructorPointsNvtxHereInOneLine) {
  TempDir scratch;
  const ProgramResult r = runNvtxProgram(scratch, {});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, std::string("commtrace: set NCCL_PROFILER_PLUGIN and NVTX_INJECTION64_PATH to ") + COMMTRACE_SO_PATH + "\n");
}

TEST(NvtxPreload, OffWithCommtraceNvtxZeroOrAnotherTool) {
  TempDir off;
  const ProgramResult r = runNvtxProgram(off, {{"COMMTRACE_NVTX", "0"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "done\n");
  EXPECT_TRUE(rangesIn(off.path() + "/run").empty());
  EXPECT_EQ(r.err.find("NVTX_INJECTION64_PATH"), std::string::npos) << r.err;

  // Another tool's injection (here: none that loads) is left alone: NVTX goes there, not here.
  TempDir other;
  const ProgramResult o = runNvtxProgram(other, {{"NVTX_INJECTION64_PATH", other.path() + "/no-such-tool.so"}});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.out, "done\n");
  EXPECT_TRUE(rangesIn(other.path() + "/run").empty());
}

}  // namespace
}  // namespace commtrace
