// What an NVTX range costs the thread that makes it, called as NVTX calls the injection:
// InitializeInjectionNvtx2 fills the slots of a module table built here the way NVTX builds
// its own, and the benchmark calls through those slots. A real Flusher drains the rings;
// between batches of 1000 pairs the benchmark asks it to and waits, outside the timed
// region, so no ring fills.
#define NVTX_NO_IMPL
#include <benchmark/benchmark.h>
#include <nvtx3/nvToolsExt.h>

#include <memory>
#include <string>

#include "bench/main_with_run_dir.h"
#include "ringbuffer/ring_registry.h"
#include "sink/flusher.h"

extern "C" int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t);

namespace commtrace {
namespace {

std::string g_run_dir;

// NVTX's side: one slot per callback id, each a function pointer the tool overwrites.
NvtxFunctionPointer g_core_slots[NVTX_CBID_CORE_SIZE] = {};
NvtxFunctionPointer* g_core_table[NVTX_CBID_CORE_SIZE] = {};
NvtxFunctionPointer g_core2_slots[NVTX_CBID_CORE2_SIZE] = {};
NvtxFunctionPointer* g_core2_table[NVTX_CBID_CORE2_SIZE] = {};

int getModule(NvtxCallbackModule module, NvtxFunctionTable* table, unsigned int* size) {
  if (module == NVTX_CB_MODULE_CORE) return *table = g_core_table, *size = NVTX_CBID_CORE_SIZE, 1;
  if (module == NVTX_CB_MODULE_CORE2) return *table = g_core2_table, *size = NVTX_CBID_CORE2_SIZE, 1;
  return 0;
}
const NvtxExportTableCallbacks kCallbacks{sizeof(NvtxExportTableCallbacks), getModule};
const void* exportTable(uint32_t id) { return id == NVTX_ETID_CALLBACKS ? &kCallbacks : nullptr; }

using PushA = int (*)(const char*);
using Pop = int (*)();
using DomainPushEx = int (*)(nvtxDomainHandle_t, const nvtxEventAttributes_t*);
using DomainPop = int (*)(nvtxDomainHandle_t);

void injectOnce() {
  static const bool injected = [] {
    for (int i = 0; i < NVTX_CBID_CORE_SIZE; ++i) g_core_table[i] = &g_core_slots[i];
    for (int i = 0; i < NVTX_CBID_CORE2_SIZE; ++i) g_core2_table[i] = &g_core2_slots[i];
    return InitializeInjectionNvtx2(exportTable) == 1;
  }();
  if (!injected) std::abort();
}

// Runs batches of `body` (one push/pop pair each) with a Flusher draining between them.
template <class Body>
void runPairs(benchmark::State& state, Body body) {
  injectOnce();
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
  injectOnce();
  const auto push = reinterpret_cast<PushA>(g_core_slots[NVTX_CBID_CORE_RangePushA]);
  const auto pop = reinterpret_cast<Pop>(g_core_slots[NVTX_CBID_CORE_RangePop]);
  runPairs(state, [&] {
    push("forward");
    pop();
  });
}
BENCHMARK(BM_PushPopAscii)->UseRealTime();

// NCCL's ranges: a domain and a registered string, no hashing on the push.
void BM_PushPopRegistered(benchmark::State& state) {
  injectOnce();
  const auto create = reinterpret_cast<nvtxDomainHandle_t (*)(const char*)>(g_core2_slots[NVTX_CBID_CORE2_DomainCreateA]);
  const auto registerString =
      reinterpret_cast<nvtxStringHandle_t (*)(nvtxDomainHandle_t, const char*)>(g_core2_slots[NVTX_CBID_CORE2_DomainRegisterStringA]);
  const nvtxDomainHandle_t domain = create("NCCL");
  nvtxEventAttributes_t a = {};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = registerString(domain, "AllReduce");
  const auto push = reinterpret_cast<DomainPushEx>(g_core2_slots[NVTX_CBID_CORE2_DomainRangePushEx]);
  const auto pop = reinterpret_cast<DomainPop>(g_core2_slots[NVTX_CBID_CORE2_DomainRangePop]);
  runPairs(state, [&] {
    push(domain, &a);
    pop(domain);
  });
}
BENCHMARK(BM_PushPopRegistered)->UseRealTime();

}  // namespace
}  // namespace commtrace

int main(int argc, char** argv) { return commtrace::bench::mainWithRunDir(argc, argv, commtrace::g_run_dir); }
