// The NVTX face in process, called through the slots InitializeInjectionNvtx2 fills, as
// NVTX calls it: ranges pushed and popped on many threads at once, start/end ranges ended on
// other threads, depth past the stack, unknown and doubled ends. The test drains the rings
// itself. Runs under TSan.
#define NVTX_NO_IMPL
#include "cupti/nvtx_face.h"

#include <gtest/gtest.h>
#include <nvtx3/nvToolsExt.h>

#include <map>
#include <string>
#include <thread>
#include <vector>

#include "core/record.h"
#include "core/string_table.h"
#include "ringbuffer/ring_registry.h"

extern "C" int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t);

namespace commtrace {
namespace {

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

template <class F>
F slot(NvtxFunctionPointer* slots, int id) {
  return reinterpret_cast<F>(slots[id]);
}

class NvtxFaceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    for (int i = 0; i < NVTX_CBID_CORE_SIZE; ++i) g_core_table[i] = &g_core_slots[i];
    for (int i = 0; i < NVTX_CBID_CORE2_SIZE; ++i) g_core2_table[i] = &g_core2_slots[i];
    ASSERT_EQ(InitializeInjectionNvtx2(exportTable), 1);
  }
  void SetUp() override { drain(); }

  // Every PhaseRange recorded since the last call: name -> depths.
  std::multimap<std::string, uint16_t> drain() {
    std::multimap<std::string, uint16_t> out;
    for (int pass = 0; pass < 2; ++pass)  // rings retired during the first pass are freed after it
      RingRegistry::global().forEachRing([&](ThreadRing& ring) {
        ring.drain([&](const RecordSlot& s) {
          if (s.kind == RecordKind::kPhaseRange)
            out.emplace(std::string(StringTable::global().lookup(s.payload.phase_range.name)), s.payload.phase_range.depth);
        });
      });
    return out;
  }

  using PushA = int (*)(const char*);
  using Pop = int (*)();
  using StartA = nvtxRangeId_t (*)(const char*);
  using End = void (*)(nvtxRangeId_t);
  PushA push = slot<PushA>(g_core_slots, NVTX_CBID_CORE_RangePushA);
  Pop pop = slot<Pop>(g_core_slots, NVTX_CBID_CORE_RangePop);
  StartA start = slot<StartA>(g_core_slots, NVTX_CBID_CORE_RangeStartA);
  End end = slot<End>(g_core_slots, NVTX_CBID_CORE_RangeEnd);
};

TEST_F(NvtxFaceTest, PushPopOnManyThreadsKeepsEachThreadsNesting) {
  constexpr int kThreads = 8, kSteps = 200;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < kSteps; ++i) {
        EXPECT_EQ(push("step"), 0);
        EXPECT_EQ(push("layer"), 1);
        EXPECT_EQ(pop(), 1);
        EXPECT_EQ(pop(), 0);
      }
      EXPECT_EQ(pop(), -1) << "nothing left to pop";
    });
  for (std::thread& t : threads) t.join();
  const auto ranges = drain();
  EXPECT_EQ(ranges.count("step"), static_cast<size_t>(kThreads * kSteps));
  EXPECT_EQ(ranges.count("layer"), static_cast<size_t>(kThreads * kSteps));
  for (const auto& [name, depth] : ranges) EXPECT_EQ(depth, name == "step" ? 0 : 1) << name;
}

TEST_F(NvtxFaceTest, StartEndRangesEndOnOtherThreadsOnceEach) {
  constexpr int kRanges = 3000;
  std::vector<nvtxRangeId_t> ids(kRanges);
  for (int i = 0; i < kRanges; ++i) ids[i] = start("load");
  std::vector<std::thread> enders;
  for (int t = 0; t < 4; ++t)
    enders.emplace_back([&, t] {
      for (int i = t; i < kRanges; i += 4) end(ids[i]);
    });
  for (std::thread& t : enders) t.join();
  const nvtx::NvtxLosses before = nvtx::losses();
  end(ids[0]);      // a second end
  end(12345);       // an id we never gave
  end(0);           // what a full table answered: ignored
  const auto ranges = drain();
  EXPECT_EQ(ranges.count("load"), static_cast<size_t>(kRanges));
  for (const auto& [name, depth] : ranges) EXPECT_EQ(depth, nvtx::kUnnested);
  EXPECT_EQ(nvtx::losses().unknown_end - before.unknown_end, 2u);
}

TEST_F(NvtxFaceTest, RangesDeeperThanTheStackAreCountedNotRecorded) {
  const nvtx::NvtxLosses before = nvtx::losses();
  for (uint32_t i = 0; i < nvtx::kMaxDepth + 3; ++i) push("deep");
  for (uint32_t i = 0; i < nvtx::kMaxDepth + 3; ++i) pop();
  EXPECT_EQ(drain().count("deep"), static_cast<size_t>(nvtx::kMaxDepth));
  EXPECT_EQ(nvtx::losses().too_deep - before.too_deep, 3u);
}

TEST_F(NvtxFaceTest, DomainsAndRegisteredStringsAreNames) {
  const auto create = slot<nvtxDomainHandle_t (*)(const char*)>(g_core2_slots, NVTX_CBID_CORE2_DomainCreateA);
  const auto reg = slot<nvtxStringHandle_t (*)(nvtxDomainHandle_t, const char*)>(g_core2_slots, NVTX_CBID_CORE2_DomainRegisterStringA);
  const auto domainPush = slot<int (*)(nvtxDomainHandle_t, const nvtxEventAttributes_t*)>(g_core2_slots, NVTX_CBID_CORE2_DomainRangePushEx);
  const auto domainPop = slot<int (*)(nvtxDomainHandle_t)>(g_core2_slots, NVTX_CBID_CORE2_DomainRangePop);
  const nvtxDomainHandle_t nccl = create("NCCL");
  ASSERT_NE(nccl, nullptr);
  nvtxEventAttributes_t a = {};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = reg(nccl, "AllGather");
  EXPECT_EQ(domainPush(nccl, &a), 0);
  EXPECT_EQ(domainPop(nccl), 0);
  EXPECT_EQ(drain().count("AllGather"), 1u);
}

}  // namespace
}  // namespace commtrace
