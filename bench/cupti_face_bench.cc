// The CUPTI face's costs.
//
//   BM_DeliverKernelBuffer  what CUPTI's hand-off costs the thread CUPTI delivers on: one full
//                           1 MiB buffer of kernel records (64 distinct names, as a training
//                           step's kernels repeat) decoded, their names interned and pushed into
//                           the ring. The buffer is filled outside the timed region by the
//                           driver's libcupti linked in; the timed region is the delivery
//                           (cuptiActivityFlushAll calling the face's completion callback). A
//                           real Flusher drains between buffers, untimed.
//   BM_KernelBytesOnDisk    bytes on disk per kernel record for a realistic stream: steps of
//                           3,000 kernels cycling through 40 names on two streams, durations
//                           log-uniform in 2-500 us and gaps in 1-300 us, to the nanosecond (the
//                           spread of HTA's nccl_parser_config sample: durations' deciles 2-109 us,
//                           gaps' 1-348 us); drained every N kernels (the argument). Kernel
//                           records reach the rings when the face flushes CUPTI, every 0.5 s, so
//                           N per chunk is what a GPU running 2 N kernels/s writes: 1,000 for a
//                           step of a few thousand kernels every second or two.
//                           The file is read back and must hold every kernel.
#include <benchmark/benchmark.h>

#include <sys/stat.h>

#include <cmath>
#include <random>
#include <string>

#include "bench/main_with_run_dir.h"
#include "core/settings.h"
#include "cupti/cupti_face.h"
#include "ringbuffer/ring_registry.h"
#include "sink/flusher.h"
#include "sink/reader.h"
#include "tests/support/linked_cupti.h"
#include "tools/nccl-driver/driver_cupti.h"

namespace commtrace {
namespace {

std::string g_run_dir;

void BM_DeliverKernelBuffer(benchmark::State& state) {
  FlusherOptions options;
  options.dir = g_run_dir;
  Flusher flusher(options);
  flusher.start();
  if (!cupti::attach(testutil::linkedCuptiApi(), kCuptiOn, "fake")) {
    state.SkipWithError("the fake CUPTI would not attach");
    return;
  }
  fakeCuptiHoldFullBuffers(1);
  std::string names[64];
  for (int i = 0; i < 64; ++i) names[i] = "void at::native::elementwise_kernel<128, 4>(int, Functor" + std::to_string(i) + ")";
  constexpr uint64_t kPerBuffer = (1u << 20) / sizeof(CUpti_ActivityKernel10);
  uint64_t records = 0;
  for (auto _ : state) {
    state.PauseTiming();
    for (uint64_t i = 0; i < kPerBuffer; ++i) fakeCuptiKernel(names[i % 64].c_str(), i * 1000, i * 1000 + 700, 0, 7, 0);
    state.ResumeTiming();
    cuptiActivityFlushAll(0);
    records += kPerBuffer;
    state.PauseTiming();
    RingRegistry::global().flushAndWait(5000);
    state.ResumeTiming();
  }
  cupti::detachForTest();
  flusher.stop();
  state.counters["ns_per_record"] =
      benchmark::Counter(static_cast<double>(records), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_DeliverKernelBuffer)->UseRealTime();

void BM_KernelBytesOnDisk(benchmark::State& state) {
  constexpr int kSteps = 20, kKernelsPerStep = 3000, kNames = 40;
  const auto drain_every = static_cast<uint64_t>(state.range(0));
  for (auto _ : state) {
    FlusherOptions options;
    options.dir = g_run_dir;
    options.flush_period_ms = 3'600'000;  // drains come from the stream below
    Flusher flusher(options);
    if (!flusher.start() || !cupti::attach(testutil::linkedCuptiApi(), kCuptiOn, "fake")) {
      state.SkipWithError("no Flusher or no CUPTI face");
      break;
    }
    std::string names[kNames];
    for (int i = 0; i < kNames; ++i) names[i] = "void at::native::kernel_" + std::to_string(i) + "<float, 128>(Params)";
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> log_gap(std::log(1'000.0), std::log(300'000.0)),
        log_duration(std::log(2'000.0), std::log(500'000.0));
    auto gap = [&](std::mt19937_64& g) { return static_cast<uint64_t>(std::exp(log_gap(g))); };
    auto duration = [&](std::mt19937_64& g) { return static_cast<uint64_t>(std::exp(log_duration(g))); };
    uint64_t t = 1'790'000'000'000'000'000ull, kernels = 0;
    for (int step = 0; step < kSteps; ++step)
      for (int k = 0; k < kKernelsPerStep; ++k) {
        t += gap(rng);
        const uint64_t end = t + duration(rng);
        fakeCuptiKernel(names[k % kNames].c_str(), t, end, 0, k % 7 == 0 ? 13 : 7, static_cast<uint32_t>(++kernels));
        t = end;
        if (kernels % drain_every == 0) {
          cuptiActivityFlushAll(0);
          RingRegistry::global().flushAndWait(5000);
        }
      }
    cupti::detachForTest();
    flusher.stop();
    struct stat st {};
    TraceReader reader;
    std::string error;
    uint64_t read_back = 0;
    if (stat(flusher.path().c_str(), &st) != 0 || !reader.open(flusher.path(), error)) {
      state.SkipWithError("cannot read the trace file");
      break;
    }
    for (DecodedChunk chunk; reader.next(chunk);)
      for (const RecordSlot& slot : chunk.records) read_back += slot.kind == RecordKind::kKernelActivity;
    if (read_back != kernels) {
      state.SkipWithError("the file does not hold every kernel");
      break;
    }
    state.counters["kernels"] = static_cast<double>(kernels);
    state.counters["bytes_per_kernel"] = static_cast<double>(st.st_size) / static_cast<double>(kernels);
  }
}
BENCHMARK(BM_KernelBytesOnDisk)->Arg(1000)->Arg(4000)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace commtrace

int main(int argc, char** argv) { return commtrace::bench::mainWithRunDir(argc, argv, commtrace::g_run_dir); }
