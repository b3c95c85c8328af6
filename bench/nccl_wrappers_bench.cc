// What the NCCL wrappers add to a call (issue #5: <= 100 ns per call). The program links
// libcommtrace.so ahead of the fake libnccl.so.2, so its ncclAllReduce binds to the
// wrapper exactly as under LD_PRELOAD, and pncclAllReduce to the fake directly. The real
// Flusher drains the records into a temporary run directory.
//
//   BM_AllReduce/direct          pncclAllReduce into the fake: the call without commtrace
//   BM_AllReduce/recorded        ncclAllReduce through the wrapper on a 2-rank communicator
//                                the plugin face is not attached to: one CollRecord per call
//   BM_AllReduce/direct_plugin   pncclAllReduce on a communicator the fake attached the
//                                plugin face to (CollApi + Coll events per call, as NCCL)
//   BM_AllReduce/covered         ncclAllReduce through the wrapper on that communicator:
//                                the plugin records, the wrapper only witnesses and counts
//
//   BM_AllReduceAtDepth/N        covered, called N frames below the benchmark's loop: what
//                                a sampled call stack costs grows with its depth
//
// The wrappers' cost is recorded - direct and covered - direct_plugin. The call stacks'
// sampling (COMMTRACE_STACKS, read once at start) is the same runs under
// COMMTRACE_STACKS=0 (none), unset (one op in 1,024: amortised) and =1 (every op: a sample's
// own cost).
//
//   build-bench/bin/nccl_wrappers_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <cstdio>

#include "interpose/nccl_api.h"
#include "libcommtrace/capture_api.h"
#include "tests/support/temp_dir.h"

extern "C" na::Result pncclAllReduce(const void* send, void* recv, size_t count, na::DataType datatype,
                                     na::RedOp op, na::CommHandle comm, na::Stream stream);

namespace {

using namespace commtrace::nccl_api;

CommHandle g_plain = nullptr;    // the plugin face not attached
CommHandle g_plugged = nullptr;  // the fake plays NCCL's side of the plugin face

CommHandle makeComm(bool with_plugin, char seed) {
  if (with_plugin) {
    setenv("FAKE_NCCL_PLUGIN", "5", 1);
    setenv("NCCL_PROFILER_PLUGIN", COMMTRACE_SO_PATH, 1);
  } else {
    unsetenv("FAKE_NCCL_PLUGIN");
  }
  UniqueId id{};
  id.internal[0] = seed;
  CommHandle comm = nullptr;
  if (ncclCommInitRank(&comm, 2, id, 0) != kSuccess) std::fprintf(stderr, "bench: init failed\n");
  return comm;
}

void BM_AllReduce(benchmark::State& state, bool wrapped, bool plugin) {
  static float buffer[16];
  CommHandle comm = plugin ? g_plugged : g_plain;
  auto* const call = wrapped ? &ncclAllReduce : &pncclAllReduce;
  auto* stream = reinterpret_cast<Stream>(0x5000);
  for (auto _ : state) benchmark::DoNotOptimize(call(buffer, buffer, 16, kFloat32, 0, comm, stream));
}
BENCHMARK_CAPTURE(BM_AllReduce, direct, false, false);
BENCHMARK_CAPTURE(BM_AllReduce, recorded, true, false);
BENCHMARK_CAPTURE(BM_AllReduce, direct_plugin, false, true);
BENCHMARK_CAPTURE(BM_AllReduce, covered, true, true);

// The covered call, `depth` noinline frames down.
__attribute__((noinline)) void callAtDepth(benchmark::State& state, int depth, CommHandle comm) {
  static float buffer[16];
  if (depth > 0) {
    callAtDepth(state, depth - 1, comm);
    benchmark::ClobberMemory();  // no tail call: each level keeps its frame
    return;
  }
  auto* stream = reinterpret_cast<Stream>(0x5000);
  for (auto _ : state) benchmark::DoNotOptimize(ncclAllReduce(buffer, buffer, 16, kFloat32, 0, comm, stream));
}

void BM_AllReduceAtDepth(benchmark::State& state) { callAtDepth(state, static_cast<int>(state.range(0)), g_plugged); }
BENCHMARK(BM_AllReduceAtDepth)->Arg(10)->Arg(40);

}  // namespace

int main(int argc, char** argv) {
  const commtrace::testutil::TempDir dir;
  if (commtrace_start(dir.path().c_str()) != 0) return 1;
  g_plain = makeComm(false, 'a');
  g_plugged = makeComm(true, 'b');
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  commtrace_stop();
  return 0;
}
