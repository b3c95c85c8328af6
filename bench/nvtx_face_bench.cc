// What an NVTX range costs the thread that makes it, called as NVTX calls the injection:
// InitializeInjectionNvtx2 fills the slots of a module table built here the way NVTX builds
// its own, and the benchmark calls through those slots. A real Flusher drains the rings;
// between batches of 1000 pairs the benchmark asks it to and waits, outside the timed
// region, so no ring fills.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "bench/main_with_run_dir.h"
#include "ringbuffer/ring_registry.h"
#include "sink/flusher.h"
#include "tests/support/nvtx_host.h"

namespace commtrace {
namespace {

std::string g_run_dir;

using PushA = int (*)(const char*);
using Pop = int (*)();
using DomainPushEx = int (*)(nvtxDomainHandle_t, const nvtxEventAttributes_t*);
using DomainPop = int (*)(nvtxDomainHandle_t);

const testutil::NvtxHost& nvtxHost() {
  const testutil::NvtxHost* host = testutil::NvtxHost::injected();
  if (host == nullptr) std::abort();
  return *host;
}

// Runs batches of `body` (one push/pop pair each) with a Flusher draining between them.
template <class Body>
void runPairs(benchmark::State& state, Body body) {
  FlusherOptions options;
  options.dir = g_run_dir;
  Flusher flusher(options);
  flusher.start();
  constexpr int kBatch = 1000;
  uint64_t pairs = 0;  // each recorded one PhaseRange
  for (auto _ : state) {
    for (int i = 0; i < kBatch; ++i) body();
    pairs += kBatch;
    state.PauseTiming();
    RingRegistry::global().flushAndWait(5000);  // the flusher drains what the batch recorded
    state.ResumeTiming();
  }
  flusher.stop();
  state.counters["ns_per_pair"] = benchmark::Counter(static_cast<double>(pairs), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// torch.cuda.nvtx.range_push/range_pop: an ASCII name interned on every push.
void BM_PushPopAscii(benchmark::State& state) {
  const auto push = nvtxHost().core<PushA>(NVTX_CBID_CORE_RangePushA);
  const auto pop = nvtxHost().core<Pop>(NVTX_CBID_CORE_RangePop);
  runPairs(state, [&] {
    push("forward");
    pop();
  });
}
BENCHMARK(BM_PushPopAscii)->UseRealTime();

// NCCL's ranges: a domain and a registered string, no hashing on the push.
void BM_PushPopRegistered(benchmark::State& state) {
  const auto create = nvtxHost().domain<nvtxDomainHandle_t (*)(const char*)>(NVTX_CBID_CORE2_DomainCreateA);
  const auto registerString =
      nvtxHost().domain<nvtxStringHandle_t (*)(nvtxDomainHandle_t, const char*)>(NVTX_CBID_CORE2_DomainRegisterStringA);
  const nvtxDomainHandle_t domain = create("NCCL");
  nvtxEventAttributes_t a = {};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = registerString(domain, "AllReduce");
  const auto push = nvtxHost().domain<DomainPushEx>(NVTX_CBID_CORE2_DomainRangePushEx);
  const auto pop = nvtxHost().domain<DomainPop>(NVTX_CBID_CORE2_DomainRangePop);
  runPairs(state, [&] {
    push(domain, &a);
    pop(domain);
  });
}
BENCHMARK(BM_PushPopRegistered)->UseRealTime();

}  // namespace
}  // namespace commtrace

int main(int argc, char** argv) { return commtrace::bench::mainWithRunDir(argc, argv, commtrace::g_run_dir); }
