// The preload face's CUDA runtime wrappers (interpose/cuda_wrappers.cc), end to end: a
// program calling the sync entry points runs under LD_PRELOAD=libcommtrace.so against the
// fake libcudart.so.13 (tests/fake_cudart.cc), and its trace file must hold one ApiSpan per
// call with the call's name, stream, event, result and blocked time, while the program sees
// exactly what the runtime returned.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "core/record.h"
#include "sink/reader.h"
#include "tests/programs/cuda_sync_caller.h"
#include "tests/support/run_program.h"
#include "tests/support/sink_test_support.h"
#include "tests/support/temp_dir.h"
#include "tools/report/analyses/cuda_sync.h"
#include "tools/report/load/run_loader.h"

using namespace commtrace;
using namespace commtrace::testing::cuda_sync_caller;
using commtrace::testing::readTrace;
using commtrace::testing::traceFilesIn;
using commtrace::testutil::linesOf;
using commtrace::testutil::runProgram;
using commtrace::testutil::TempDir;

namespace {

constexpr uint64_t kPerThreadDefaultStream = 0x2;  // cudaStreamPerThread
constexpr int kSharedObjectSymbolNotFound = 302;   // cudaErrorSharedObjectSymbolNotFound
constexpr int kSleepUs = 2000;

// One call of cuda_sync_caller's sequence: what it passes and what its record must say.
struct Call {
  std::string name;
  uint64_t stream_passed;
  uint64_t event;
  unsigned flags;
  uint64_t stream_recorded;  // _ptsz calls name the per-thread default stream where they pass 0
};

const std::vector<Call> kSequence = {
    {"cudaStreamSynchronize", kStreamA, 0, 0, kStreamA},
    {"cudaStreamSynchronize", kStreamB, 0, 0, kStreamB},
    {"cudaStreamSynchronize", 0, 0, 0, 0},
    {"cudaStreamSynchronize_ptsz", kStreamA, 0, 0, kStreamA},
    {"cudaStreamSynchronize_ptsz", 0, 0, 0, kPerThreadDefaultStream},
    {"cudaDeviceSynchronize", 0, 0, 0, 0},
    {"cudaEventSynchronize", 0, kEventA, 0, 0},
    {"cudaStreamWaitEvent", kStreamB, kEventA, 0, kStreamB},
    {"cudaStreamWaitEvent_ptsz", 0, kEventB, 1, kPerThreadDefaultStream},
};

struct Span {
  std::string name;
  ApiSpanRecord record;
};

struct CallerRun {
  testutil::ProgramResult program;
  std::vector<std::string> trace_files;
  std::vector<Span> spans;  // in call order
};

std::string hex(uint64_t v) {
  if (v == 0) return "0";
  char text[32];
  std::snprintf(text, sizeof text, "%#llx", static_cast<unsigned long long>(v));
  return text;
}

// What the program prints for the sequence: the fake's line for each call that reached it
// (when traced), then the program's "NAME RESULT".
std::string expectedStdout(int repeat, int result, bool traced) {
  std::string out;
  for (int i = 0; i < repeat; ++i) {
    for (const Call& call : kSequence) {
      if (traced) {
        out += "fake_cudart: " + call.name + " stream=" + hex(call.stream_passed) + " event=" + hex(call.event) +
               " flags=" + std::to_string(call.flags) + "\n";
      }
      out += call.name + " " + std::to_string(result) + "\n";
    }
  }
  return out;
}

// Runs a caller (linked, or the dlsym one with its mode) under the preload and reads back
// every ApiSpan of the trace files it left.
CallerRun runCaller(const TempDir& dir, std::vector<std::string> argv,
              std::map<std::string, std::optional<std::string>> env = {}) {
  const std::string trace_dir = dir.path() + "/trace";
  env.emplace("LD_PRELOAD", COMMTRACE_SO_PATH);
  env.emplace("LD_LIBRARY_PATH", FAKE_CUDART_DIR);
  env.emplace("COMMTRACE_DIR", trace_dir);
  env.emplace("FAKE_CUDART_TRACE", "1");
  CallerRun run;
  run.program = runProgram(std::move(argv), dir.path(), env);
  run.trace_files = traceFilesIn(trace_dir);
  for (const std::string& path : run.trace_files) {
    auto trace = readTrace(path);
    EXPECT_TRUE(trace.opened) << trace.error;
    for (const DecodedChunk& chunk : trace.chunks) {
      for (const RecordSlot& slot : chunk.records) {
        if (slot.kind != RecordKind::kApiSpan) continue;
        run.spans.push_back({std::string(trace.reader->str(slot.payload.api_span.name)), slot.payload.api_span});
      }
    }
  }
  std::stable_sort(run.spans.begin(), run.spans.end(), [](const Span& a, const Span& b) {
    return a.record.cpu_start_ns < b.record.cpu_start_ns;
  });
  return run;
}

// The report's view of the run a caller left.
std::vector<report::CudaSyncRow> reportedSyncWaits(const TempDir& dir) {
  report::RunModel model;
  std::ostringstream err;
  EXPECT_TRUE(report::loadRun({.paths = {dir.path() + "/trace"}}, model, err)) << err.str();
  return report::cudaSyncWaits(model);
}

// One span per call of the sequence, repeated, each as the call was made.
void expectSpansOfSequence(const CallerRun& run, int repeat, int result, uint64_t min_blocked_ns) {
  ASSERT_EQ(run.trace_files.size(), 1u) << run.program.err;
  ASSERT_EQ(run.spans.size(), kSequence.size() * repeat);
  for (size_t i = 0; i < run.spans.size(); ++i) {
    const Call& call = kSequence[i % kSequence.size()];
    const Span& span = run.spans[i];
    SCOPED_TRACE("span " + std::to_string(i) + " (" + call.name + ")");
    EXPECT_EQ(span.name, call.name);
    EXPECT_EQ(span.record.stream, call.stream_recorded);
    EXPECT_EQ(span.record.arg, call.event);
    EXPECT_EQ(span.record.comm_id, 0u);
    EXPECT_EQ(span.record.result, result);
    EXPECT_GT(span.record.cpu_start_ns, 0u);
    EXPECT_GE(span.record.cpu_end_ns - span.record.cpu_start_ns, min_blocked_ns);
  }
}

TEST(CudaWrappersTest, EachCallRecordsItsStreamEventResultAndBlockedTime) {
  TempDir dir;
  const CallerRun run = runCaller(dir, {CUDA_SYNC_CALLER_PATH, "2"}, {{"FAKE_CUDART_SLEEP_US", std::to_string(kSleepUs)}});
  ASSERT_EQ(run.program.exit_code, 0) << run.program.err;
  EXPECT_EQ(run.program.out, expectedStdout(2, 0, true));
  expectSpansOfSequence(run, 2, 0, uint64_t{kSleepUs} * 1000);
}

// What `commtrace report` makes of those records: blocked time per rank, call and stream.
TEST(CudaWrappersTest, ReportShowsBlockedTimePerCallAndStream) {
  TempDir dir;
  const CallerRun run = runCaller(dir, {CUDA_SYNC_CALLER_PATH, "1"},
                                  {{"FAKE_CUDART_SLEEP_US", std::to_string(kSleepUs)}, {"RANK", "3"}, {"WORLD_SIZE", "4"}});
  ASSERT_EQ(run.program.exit_code, 0) << run.program.err;
  const std::vector<report::CudaSyncRow> rows = reportedSyncWaits(dir);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].rank, 3);
  EXPECT_GE(rows[0].blocked_us, 9.0 * kSleepUs);
  std::map<std::string, std::map<uint64_t, uint64_t>> calls_per_stream;
  std::map<std::string, uint64_t> calls;
  for (const report::CudaSyncCallRow& c : rows[0].calls) {
    calls[c.call] = c.stats.count;
    EXPECT_GE(c.stats.p50_us, kSleepUs) << c.call;
    EXPECT_GE(c.stats.total_us, static_cast<double>(c.stats.count * kSleepUs)) << c.call;
    for (const report::CudaSyncStreamRow& s : c.streams) calls_per_stream[c.call][s.stream] = s.stats.count;
  }
  EXPECT_EQ(calls, (std::map<std::string, uint64_t>{{"cudaDeviceSynchronize", 1},
                                                    {"cudaEventSynchronize", 1},
                                                    {"cudaStreamSynchronize", 5},
                                                    {"cudaStreamWaitEvent", 2}}));
  EXPECT_EQ(calls_per_stream["cudaStreamSynchronize"],
            (std::map<uint64_t, uint64_t>{{0, 1}, {kPerThreadDefaultStream, 1}, {kStreamA, 2}, {kStreamB, 1}}));
  EXPECT_EQ(calls_per_stream["cudaStreamWaitEvent"],
            (std::map<uint64_t, uint64_t>{{kPerThreadDefaultStream, 1}, {kStreamB, 1}}));
  EXPECT_EQ(calls_per_stream.count("cudaDeviceSynchronize"), 0u);
}

TEST(CudaWrappersTest, ForcedRuntimeErrorReachesProgramAndRecordUnchanged) {
  TempDir dir;
  const CallerRun run = runCaller(dir, {CUDA_SYNC_CALLER_PATH, "1"}, {{"FAKE_CUDART_RESULT", "700"}});
  ASSERT_EQ(run.program.exit_code, 0) << run.program.err;
  EXPECT_EQ(run.program.out, expectedStdout(1, 700, true));  // cudaErrorIllegalAddress
  expectSpansOfSequence(run, 1, 700, 0);
}

TEST(CudaWrappersTest, CudaSyncOffForwardsWithoutRecording) {
  TempDir dir;
  const CallerRun run = runCaller(dir, {CUDA_SYNC_CALLER_PATH, "1"},
                            {{"COMMTRACE_CUDA_SYNC", "0"}, {"FAKE_CUDART_RESULT", "600"}});
  ASSERT_EQ(run.program.exit_code, 0) << run.program.err;
  EXPECT_EQ(run.program.out, expectedStdout(1, 600, true));
  EXPECT_TRUE(run.trace_files.empty());
}

TEST(CudaWrappersTest, ProcessThatNeverCallsTheRuntimeLeavesNoFile) {
  TempDir dir;
  const CallerRun run = runCaller(dir, {CUDA_SYNC_CALLER_PATH, "0"});
  ASSERT_EQ(run.program.exit_code, 0) << run.program.err;
  EXPECT_EQ(run.program.out, "");
  EXPECT_TRUE(run.trace_files.empty());
}

#ifdef DRIVER_CUPTI_PATH
// The CUPTI face attaches at the process's first sign of GPU use, here its first CUDA sync
// call: with CUPTI held by another tool it says so once, and the program sees nothing else.
TEST(CudaWrappersTest, FirstSyncCallAttachesCuptiWhichBacksOffOnceWhenHeld) {
  TempDir dir;
  const CallerRun run = runCaller(dir, {CUDA_SYNC_CALLER_PATH, "2"},
                                  {{"COMMTRACE_CUPTI_LIB", DRIVER_CUPTI_PATH}, {"FAKE_CUPTI_HOLDER", "Nsight Systems"}});
  ASSERT_EQ(run.program.exit_code, 0) << run.program.err;
  EXPECT_EQ(run.program.out, expectedStdout(2, 0, true));
  const std::string line = "commtrace: CUPTI is held by Nsight Systems; compute timeline off (NCCL ops are still recorded)\n";
  const size_t at = run.program.err.find(line);
  EXPECT_NE(at, std::string::npos) << run.program.err;
  EXPECT_EQ(run.program.err.find(line, at + 1), std::string::npos) << "said once: " << run.program.err;
}

// A process that never uses the GPU never loads CUPTI (nor says anything about it), and
// neither does one without a CUDA driver when no libcupti is named.
TEST(CudaWrappersTest, CuptiIsLoadedOnlyByAProcessThatUsesItsGpu) {
  TempDir idle, no_driver;
  const CallerRun never = runCaller(idle, {CUDA_SYNC_CALLER_PATH, "0"},
                                    {{"COMMTRACE_CUPTI_LIB", DRIVER_CUPTI_PATH}, {"FAKE_CUPTI_HOLDER", "Nsight Systems"}});
  EXPECT_EQ(never.program.err.find("CUPTI"), std::string::npos) << never.program.err;
  const CallerRun driverless = runCaller(no_driver, {CUDA_SYNC_CALLER_PATH, "1"});
  EXPECT_EQ(driverless.program.err.find("CUPTI"), std::string::npos) << driverless.program.err;
}
#endif

// A runtime that implements one sync call with another through its PLT reaches the
// wrappers twice on one thread: only the outer call is recorded, the inner one forwarded.
TEST(CudaWrappersTest, SyncCallInsideAnotherIsForwardedNotRecorded) {
  TempDir dir;
  const CallerRun run = runCaller(dir, {CUDA_SYNC_CALLER_PATH, "1"}, {{"FAKE_CUDART_NESTED", "1"}});
  ASSERT_EQ(run.program.exit_code, 0) << run.program.err;
  const std::string device_line = "fake_cudart: cudaDeviceSynchronize stream=0 event=0 flags=0\n";
  std::string want = expectedStdout(1, 0, true);
  want.insert(want.find(device_line), "fake_cudart: cudaStreamSynchronize stream=0 event=0 flags=0\n");
  EXPECT_EQ(run.program.out, want);
  expectSpansOfSequence(run, 1, 0, 0);
}

// Python extensions dlopen the runtime themselves; RTLD_LOCAL hides it from RTLD_NEXT.
TEST(CudaWrappersTest, RuntimeDlopenedGloballyOrLocallyIsFound) {
  for (const char* mode : {"global", "local"}) {
    SCOPED_TRACE(mode);
    TempDir dir;
    const CallerRun run = runCaller(dir, {CUDA_SYNC_CALLER_DLSYM_PATH, "1", mode});
    ASSERT_EQ(run.program.exit_code, 0) << run.program.err;
    EXPECT_EQ(run.program.out, expectedStdout(1, 0, true));
    expectSpansOfSequence(run, 1, 0, 0);
  }
}

TEST(CudaWrappersTest, NoRuntimeLoadedAnswersSymbolNotFoundAndSaysSoOncePerCall) {
  TempDir dir;
  const CallerRun run = runCaller(dir, {CUDA_SYNC_CALLER_DLSYM_PATH, "2", "none"});
  ASSERT_EQ(run.program.exit_code, 0) << run.program.err;
  EXPECT_EQ(run.program.out, expectedStdout(2, kSharedObjectSymbolNotFound, false));
  EXPECT_TRUE(run.trace_files.empty());
  std::map<std::string, int> lines_naming;
  for (const std::string& line : linesOf(run.program.err)) {
    if (line.rfind("commtrace: no loaded CUDA runtime defines ", 0) != 0) continue;
    EXPECT_NE(line.find("cudaErrorSharedObjectSymbolNotFound (302)"), std::string::npos) << line;
    const size_t name_start = line.find("cuda");
    ++lines_naming[line.substr(name_start, line.find(';') - name_start)];
  }
  const std::map<std::string, int> once_each = {
      {"cudaDeviceSynchronize", 1},      {"cudaEventSynchronize", 1}, {"cudaStreamSynchronize", 1},
      {"cudaStreamSynchronize_ptsz", 1}, {"cudaStreamWaitEvent", 1},  {"cudaStreamWaitEvent_ptsz", 1}};
  EXPECT_EQ(lines_naming, once_each) << run.program.err;
}

}  // namespace
