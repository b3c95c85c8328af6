// What CUPTI's hand-off costs the thread CUPTI delivers on: one full 1 MiB buffer of kernel
// records (64 distinct names, as a training step's kernels repeat) decoded, their names
// interned and pushed into the ring. The buffer is filled outside the timed region by the
// fake libcupti linked in; the timed region is the delivery (cuptiActivityFlushAll calling
// the face's completion callback). A real Flusher drains between buffers, untimed.
#include <benchmark/benchmark.h>

#include <string>

#include "bench/main_with_run_dir.h"
#include "core/settings.h"
#include "cupti/cupti_face.h"
#include "ringbuffer/ring_registry.h"
#include "sink/flusher.h"
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

}  // namespace
}  // namespace commtrace

int main(int argc, char** argv) { return commtrace::bench::mainWithRunDir(argc, argv, commtrace::g_run_dir); }
