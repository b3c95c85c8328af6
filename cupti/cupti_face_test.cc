// The CUPTI face in process, through the fake libcupti linked into this test (the same
// fake the NCCL driver loads): what reaches the rings, back-off when CUPTI is held, the
// bounded buffer pool and CUPTI's drop count, sampling windows, and CUPTI delivering on
// several threads while the flusher's hook runs (TSan).
#include "cupti/cupti_face.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/record.h"
#include "core/settings.h"
#include "core/string_table.h"
#include "cupti/activity_decode.h"
#include "ringbuffer/ring_registry.h"
#include "tests/support/linked_cupti.h"
#include "tools/nccl-driver/driver_cupti.h"

namespace commtrace::cupti {
namespace {

struct Drained {
  std::vector<KernelActivityRecord> activity;
  uint64_t cupti_drops = 0;  // the latest DropSummary from CUPTI's drops
};

Drained drain() {
  Drained out;
  for (int pass = 0; pass < 2; ++pass)
    RingRegistry::global().forEachRing([&](ThreadRing& ring) {
      ring.drain([&](const RecordSlot& s) {
        if (s.kind == RecordKind::kKernelActivity) out.activity.push_back(s.payload.kernel_activity);
        if (s.kind == RecordKind::kDropSummary && s.payload.drop_summary.thread == kCuptiDropThread) {
          EXPECT_EQ(s.payload.drop_summary.dropped_kind, static_cast<uint8_t>(RecordKind::kKernelActivity));
          out.cupti_drops = s.payload.drop_summary.ring_full;
        }
      });
    });
  return out;
}

std::string nameOf(StringId id) { return std::string(StringTable::global().lookup(id)); }

class CuptiFaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fakeCuptiReset();
    drain();
  }
  void TearDown() override {
    detachForTest();
    fakeCuptiReset();
  }
};

TEST_F(CuptiFaceTest, KernelsAndCopiesReachTheRingsAsCuptiDescribedThem) {
  ASSERT_TRUE(attach(testutil::linkedCuptiApi(), kCuptiOn, "fake"));
  fakeCuptiKernel("ampere_sgemm_128x64_nn", 1'000, 5'000, 3, 7, 42);
  fakeCuptiKernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 5'100, 9'000, 3, 13, 43);
  fakeCuptiMemcpy(1 << 20, 1, 9'500, 9'900, 3, 7);
  beforeDrain(/*last=*/true);
  const Drained d = drain();
  ASSERT_EQ(d.activity.size(), 3u);
  const KernelActivityRecord& gemm = d.activity[0];
  EXPECT_EQ(nameOf(gemm.name), "ampere_sgemm_128x64_nn");
  EXPECT_EQ(gemm.start_ns, 1'000u);
  EXPECT_EQ(gemm.end_ns, 5'000u);
  EXPECT_EQ(gemm.device, 3u);
  EXPECT_EQ(gemm.stream_id, 7u);
  EXPECT_EQ(gemm.correlation_id, 42u);
  EXPECT_EQ(gemm.block_size, 256u);
  EXPECT_EQ(gemm.grid_size, 1u);
  EXPECT_EQ(gemm.activity, kKernel);
  EXPECT_EQ(nameOf(d.activity[1].name), "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  EXPECT_EQ(d.activity[1].stream_id, 13u);
  const KernelActivityRecord& copy = d.activity[2];
  EXPECT_EQ(copy.activity, kMemcpy);
  EXPECT_EQ(nameOf(copy.name), "Memcpy HtoD");
  EXPECT_EQ(copy.bytes, 1u << 20);
  EXPECT_EQ(copy.end_ns - copy.start_ns, 400u);
  EXPECT_EQ(faceStats().records, 3u);
}

TEST(KernelNameCacheTest, OnePointerOneNameUntilCuptiReusesTheMemoryInALaterBuffer) {
  KernelNameCache cache;
  char name[64] = "void flash_fwd_kernel<Flash_fwd_params>(Flash_fwd_params)";
  const StringId first = cache.intern(name);
  EXPECT_EQ(nameOf(first), name);
  EXPECT_EQ(cache.intern(name), first);
  std::strcpy(name, "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_tn");  // same address, another kernel
  EXPECT_EQ(cache.intern(name), first) << "within one buffer a checked pointer is trusted";
  cache.newBuffer();
  const StringId second = cache.intern(name);
  EXPECT_NE(second, first);
  EXPECT_EQ(nameOf(second), name);
  cache.newBuffer();
  std::strcpy(name, "void flash_fwd_kernel<Flash_fwd_params>(Flash_fwd_params)x");  // a longer name with the old as prefix
  EXPECT_EQ(nameOf(cache.intern(name)), name);
  EXPECT_EQ(cache.intern(nullptr), 0u);
}

TEST_F(CuptiFaceTest, BacksOffFromAToolThatGaveCuptiNoName) {
  fakeCuptiSetHolder("CUPTI for <not provided>");  // what PyTorch's profiler reads back as
  testing::internal::CaptureStderr();
  EXPECT_FALSE(attach(testutil::linkedCuptiApi(), kCuptiOn, "fake"));
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "commtrace: CUPTI is held by another tool that gave it no name (PyTorch's profiler, for one); compute timeline off "
            "(NCCL ops are still recorded)\n");
  fakeCuptiSetHolder(nullptr);
}

TEST_F(CuptiFaceTest, BacksOffNamingTheToolThatHoldsCupti) {
  fakeCuptiSetHolder("Nsight Systems");
  testing::internal::CaptureStderr();
  EXPECT_FALSE(attach(testutil::linkedCuptiApi(), kCuptiOn, "fake"));
  const std::string said = testing::internal::GetCapturedStderr();
  EXPECT_EQ(said, "commtrace: CUPTI is held by Nsight Systems; compute timeline off (NCCL ops are still recorded)\n");
  EXPECT_FALSE(faceStats().attached);
  fakeCuptiKernel("k", 1, 2, 0, 0, 0);  // the holder's activity is none of ours
  beforeDrain(true);
  EXPECT_TRUE(drain().activity.empty());
  EXPECT_EQ(clockNow(), 0u);
}

TEST_F(CuptiFaceTest, OffMeansNoCuptiCallAtAll) {
  EXPECT_FALSE(attach(testutil::linkedCuptiApi(), kCuptiOff, "fake"));
  fakeCuptiSetHolder(nullptr);
  // Had the face subscribed, a second subscriber would now be refused.
  CUpti_SubscriberHandle handle = nullptr;
  EXPECT_EQ(cuptiSubscribe(&handle, nullptr, nullptr), CUPTI_SUCCESS);
  cuptiUnsubscribe(handle);
}

TEST_F(CuptiFaceTest, BufferMemoryIsBoundedAndWhatCuptiDroppedIsCounted) {
  ASSERT_TRUE(attach(testutil::linkedCuptiApi(), kCuptiOn, "fake"));
  fakeCuptiHoldFullBuffers(1);  // the flusher is behind: CUPTI keeps what it filled
  const uint64_t per_buffer = 1'048'576 / sizeof(CUpti_ActivityKernel10);
  const uint64_t emitted = per_buffer * 6;  // the pool has 4
  for (uint64_t i = 0; i < emitted; ++i) fakeCuptiKernel("k", i * 10, i * 10 + 5, 0, 1, static_cast<uint32_t>(i));
  const uint64_t dropped = fakeCuptiDroppedTotal();
  EXPECT_GE(dropped, per_buffer);
  beforeDrain(true);
  const Drained d = drain();
  EXPECT_EQ(d.activity.size() + dropped, emitted);
  EXPECT_EQ(d.cupti_drops, dropped);
  EXPECT_EQ(faceStats().dropped, dropped);
  // Buffers came back: the next kernels are kept again.
  fakeCuptiHoldFullBuffers(0);
  fakeCuptiKernel("after", 1, 2, 0, 1, 0);
  beforeDrain(true);
  EXPECT_EQ(drain().activity.size(), 1u);
}

TEST_F(CuptiFaceTest, SamplingWindowsAreTheFirstSecondsOfEachPeriod) {
  constexpr uint64_t s = 1'000'000'000;
  EXPECT_TRUE(inSamplingWindow(0, 5, 60));
  EXPECT_TRUE(inSamplingWindow(5 * s - 1, 5, 60));
  EXPECT_FALSE(inSamplingWindow(5 * s, 5, 60));
  EXPECT_FALSE(inSamplingWindow(59 * s, 5, 60));
  EXPECT_TRUE(inSamplingWindow(60 * s + 1, 5, 60));
  EXPECT_TRUE(inSamplingWindow(7 * s, 60, 60));  // a window as long as its period: always on
}

TEST_F(CuptiFaceTest, SampledModeRecordsOnlyInsideWindows) {
  g_settings.cupti_window_s = 1;
  g_settings.cupti_period_s = 2;
  ASSERT_TRUE(attach(testutil::linkedCuptiApi(), kCuptiSampled, "fake"));
  fakeCuptiKernel("inside", 1, 2, 0, 0, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  beforeDrain(false);  // the window closed: kinds off, what ran inside is handed over
  fakeCuptiKernel("outside", 3, 4, 0, 0, 0);
  beforeDrain(true);
  const Drained d = drain();
  ASSERT_EQ(d.activity.size(), 1u);
  EXPECT_EQ(nameOf(d.activity[0].name), "inside");
  EXPECT_EQ(faceStats().windows_opened, 1u);
  g_settings = defaultSettings();
}

TEST_F(CuptiFaceTest, CuptisClockGoesIntoClockSamplesOnlyWhileAttached) {
  EXPECT_EQ(clockNow(), 0u);
  ASSERT_TRUE(attach(testutil::linkedCuptiApi(), kCuptiOn, "fake"));
  EXPECT_GT(clockNow(), 1'600'000'000'000'000'000u);  // CUPTI's default clock is CLOCK_REALTIME
}

// Kernel records the rings dropped because they were full, over every ring alive.
uint64_t ringFullDrops() {
  uint64_t dropped = 0;
  RingRegistry::global().forEachRing([&](ThreadRing& ring) {
    dropped += ring.dropped(RecordKind::kKernelActivity);
    ring.drain([](const RecordSlot&) {});
  });
  return dropped;
}

// Every record CUPTI delivers is drained, dropped by CUPTI, or dropped by a full ring (a
// flusher starved of CPU, as under a sanitizer on a busy machine): none is lost uncounted.
// The threads that push stay alive until their rings' drop counts are read.
TEST_F(CuptiFaceTest, DeliveriesOnManyThreadsWhileTheFlusherHandsOver) {
  ASSERT_TRUE(attach(testutil::linkedCuptiApi(), kCuptiOn, "fake"));
  constexpr int kThreads = 4, kKernels = 20'000;
  const uint64_t drops_before = ringFullDrops();
  std::atomic<bool> done{false}, counted{false};
  std::atomic<int> finished{0};
  uint64_t drained = 0;
  const auto stayUntilCounted = [&] {
    ++finished;
    while (!counted.load()) std::this_thread::yield();
  };
  std::thread flusher([&] {
    while (!done.load()) {
      beforeDrain(false);
      drained += drain().activity.size();
    }
    stayUntilCounted();
  });
  std::vector<std::thread> gpus;
  for (int t = 0; t < kThreads; ++t)
    gpus.emplace_back([t, &stayUntilCounted] {
      for (int i = 0; i < kKernels; ++i) fakeCuptiKernel("k", i, i + 1, static_cast<uint32_t>(t), 0, 0);
      stayUntilCounted();
    });
  while (finished.load() < kThreads) std::this_thread::yield();
  done = true;
  while (finished.load() < kThreads + 1) std::this_thread::yield();
  beforeDrain(true);
  drained += drain().activity.size();
  const uint64_t ring_drops = ringFullDrops() - drops_before;
  counted = true;
  for (auto& g : gpus) g.join();
  flusher.join();
  EXPECT_EQ(drained + fakeCuptiDroppedTotal() + ring_drops, uint64_t{kThreads} * kKernels);
  EXPECT_EQ(faceStats().records, drained);
}

}  // namespace
}  // namespace commtrace::cupti
