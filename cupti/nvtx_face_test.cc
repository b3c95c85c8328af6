// The NVTX face in process, called through the slots InitializeInjectionNvtx2 fills, as
// NVTX calls it: ranges pushed and popped on many threads at once, start/end ranges ended on
// other threads, depth past the stack, unknown and doubled ends. The test drains the rings
// itself. Runs under TSan.
#include "cupti/nvtx_face.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/phase_path.h"
#include "core/record.h"
#include "core/string_table.h"
#include "ringbuffer/ring_registry.h"
#include "tests/support/nvtx_host.h"

namespace commtrace {
namespace {

class NvtxFaceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_NE(testutil::NvtxHost::injected(), nullptr); }
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
  const testutil::NvtxHost& host = *testutil::NvtxHost::injected();
  PushA push = host.core<PushA>(NVTX_CBID_CORE_RangePushA);
  Pop pop = host.core<Pop>(NVTX_CBID_CORE_RangePop);
  StartA start = host.core<StartA>(NVTX_CBID_CORE_RangeStartA);
  End end = host.core<End>(NVTX_CBID_CORE_RangeEnd);
  using Create = nvtxDomainHandle_t (*)(const char*);
  using DomainPush = int (*)(nvtxDomainHandle_t, const nvtxEventAttributes_t*);
  using DomainPop = int (*)(nvtxDomainHandle_t);
  Create create = host.domain<Create>(NVTX_CBID_CORE2_DomainCreateA);
  DomainPush domainPush = host.domain<DomainPush>(NVTX_CBID_CORE2_DomainRangePushEx);
  DomainPop domainPop = host.domain<DomainPop>(NVTX_CBID_CORE2_DomainRangePop);

  static nvtxEventAttributes_t asciiAttributes(const char* message) {
    nvtxEventAttributes_t a = {};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = message;
    return a;
  }
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
  const auto reg = host.domain<nvtxStringHandle_t (*)(nvtxDomainHandle_t, const char*)>(NVTX_CBID_CORE2_DomainRegisterStringA);
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

// NVTX nests per domain. What an H100 with NCCL 2.28.9 did: PyTorch pushed train_step,
// NCCL pushed ncclCommInitRankConfig in its domain and never popped it; PyTorch's pop must
// still close train_step, and the next step must be as deep as the first.
TEST_F(NvtxFaceTest, EachDomainNestsOnItsOwnSoARangeLeftOpenInOneDoesNotShiftAnother) {
  const nvtxDomainHandle_t nccl = create("NCCL");
  nvtxEventAttributes_t a = asciiAttributes("");
  std::thread([&] {
    EXPECT_EQ(push("train_step 0"), 0);
    a.message.ascii = "ncclCommInitRankConfig";
    EXPECT_EQ(domainPush(nccl, &a), 0);  // never popped
    a.message.ascii = "ncclAllReduce";
    EXPECT_EQ(domainPush(nccl, &a), 1);
    EXPECT_EQ(push("forward"), 1);
    EXPECT_EQ(domainPop(nccl), 1);
    EXPECT_EQ(pop(), 1);
    EXPECT_EQ(pop(), 0);
    EXPECT_EQ(push("train_step 1"), 0);
    EXPECT_EQ(pop(), 0);
    EXPECT_EQ(pop(), -1) << "the default domain's stack is empty; NCCL's still holds its init range";
  }).join();
  const auto ranges = drain();
  EXPECT_EQ(ranges.count("ncclCommInitRankConfig"), 0u) << "never popped, never recorded";
  const std::multimap<std::string, uint16_t> expected{{"train_step 0", 0}, {"train_step 1", 0}, {"forward", 1}, {"ncclAllReduce", 1}};
  EXPECT_EQ(ranges, expected);
}

TEST_F(NvtxFaceTest, PushesInMoreDomainsThanAThreadHoldsAreCountedNotRecorded) {
  const nvtxEventAttributes_t a = asciiAttributes("work");
  const nvtx::NvtxLosses before = nvtx::losses();
  std::thread([&] {
    for (uint32_t k = 0; k <= nvtx::kDomainsPerThread; ++k) {
      const nvtxDomainHandle_t d = create(("domain " + std::to_string(k)).c_str());
      EXPECT_EQ(domainPush(d, &a), k < nvtx::kDomainsPerThread ? 0 : -1) << k;
      EXPECT_EQ(domainPop(d), k < nvtx::kDomainsPerThread ? 0 : -1) << k;
    }
  }).join();
  EXPECT_EQ(drain().count("work"), static_cast<size_t>(nvtx::kDomainsPerThread));
  EXPECT_EQ(nvtx::losses().too_deep - before.too_deep, 1u);
}

// The path the thread's ops would carry: a node per place, a top-level name's digits folded
// so that every step shares one subtree (two nodes for three steps of train_step / forward),
// NCCL's own range inside leaving the path as it was, each pop restoring the outer path.
TEST_F(NvtxFaceTest, ThePathOfTheThreadFollowsItsRangesAndTheStepsShareOne) {
  const nvtxEventAttributes_t a = asciiAttributes("ncclAllReduce");
  const nvtxDomainHandle_t nccl = create("NCCL");
  std::vector<uint32_t> step_paths, forward_paths;
  ASSERT_EQ(currentPhasePath(), 0u);
  for (int step = 10; step < 13; ++step) {
    push(("train_step " + std::to_string(step)).c_str());
    step_paths.push_back(currentPhasePath());
    push("forward");
    forward_paths.push_back(currentPhasePath());
    domainPush(nccl, &a);
    EXPECT_EQ(currentPhasePath(), forward_paths.back()) << "NCCL's range is no place in the program";
    domainPop(nccl);
    pop();
    EXPECT_EQ(currentPhasePath(), step_paths.back());
    pop();
    EXPECT_EQ(currentPhasePath(), 0u);
  }
  EXPECT_NE(step_paths[0], 0u);
  EXPECT_NE(forward_paths[0], step_paths[0]);
  EXPECT_EQ(std::set<uint32_t>(step_paths.begin(), step_paths.end()).size(), 1u);
  EXPECT_EQ(std::set<uint32_t>(forward_paths.begin(), forward_paths.end()).size(), 1u);
  std::map<uint32_t, std::pair<uint32_t, std::string>> nodes;  // id -> (parent, name)
  RingRegistry::global().forEachRing([&](ThreadRing& ring) {
    ring.drain([&](const RecordSlot& r) {
      if (r.kind != RecordKind::kPhasePath) return;
      const PhasePathRecord& n = r.payload.phase_path;
      nodes[n.id] = {n.parent, std::string(StringTable::global().lookup(n.name))};
    });
  });
  EXPECT_EQ(nodes, (std::map<uint32_t, std::pair<uint32_t, std::string>>{{step_paths[0], {0, "train_step #"}},
                                                                          {forward_paths[0], {step_paths[0], "forward"}}}));
}

}  // namespace
}  // namespace commtrace
