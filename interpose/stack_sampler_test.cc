// The sampler on many threads at once: each stack interned once process-wide (the thread
// that fills its slot writes its frames, the others name it), every sample naming a stack
// whose frames were written, the weights adding up to each thread's ops; and the rate.
#include "interpose/stack_sampler.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <thread>
#include <vector>

#include "core/record.h"
#include "core/settings.h"
#include "ringbuffer/ring_registry.h"
#include "ringbuffer/ringbuffer.h"

namespace commtrace::interpose {
namespace {

struct Drained {
  std::vector<StackSampleRecord> samples;
  std::map<uint32_t, std::vector<StackFramesRecord>> frames;  // by stack
};

Drained drain() {
  Drained out;
  for (int pass = 0; pass < 2; ++pass)  // rings retired during the first pass are freed after it
    RingRegistry::global().forEachRing([&](ThreadRing& ring) {
      ring.drain([&](const RecordSlot& s) {
        if (s.kind == RecordKind::kStackSample) out.samples.push_back(s.payload.stack_sample);
        if (s.kind == RecordKind::kStackFrames) out.frames[s.payload.stack_frames.stack].push_back(s.payload.stack_frames);
      });
    });
  return out;
}

// As the wrappers do: the due check, and the sample from the caller's frame.
__attribute__((noinline)) void issue(const void* comm, int func) {
  if (const uint32_t weight = stackSampleDue(comm, func, 1024); weight != 0)
    takeStackSample({.caller = __builtin_return_address(0), .comm_id = 1, .bytes = 1024, .func = 0}, weight);
}
__attribute__((noinline)) void siteA(const void* comm) { issue(comm, 1); }
__attribute__((noinline)) void siteB(const void* comm) { issue(comm, 2); }

class StackSampler : public ::testing::Test {
 protected:
  void SetUp() override { drain(); }
  void TearDown() override { g_settings.stacks = defaultSettings().stacks; }
};

TEST_F(StackSampler, ThreadsShareEachStackAndEverySampleNamesWrittenFrames) {
  g_settings.stacks = 1;
  constexpr int kThreads = 4, kOps = 500;
  static int comm;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([] {
      for (int i = 0; i < kOps; ++i) {
        siteA(&comm);
        siteB(&comm);
      }
    });
  for (std::thread& t : threads) t.join();
  const Drained d = drain();
  ASSERT_EQ(d.samples.size(), 2u * kThreads * kOps);
  std::set<uint32_t> stacks;
  for (const StackSampleRecord& s : d.samples) {
    ASSERT_NE(s.stack, 0u);
    EXPECT_EQ(s.weight, 1u);
    stacks.insert(s.stack);
  }
  // Two call sites on each thread; the threads' outer frames (their start) are alike.
  EXPECT_EQ(stacks.size(), 2u);
  for (const uint32_t stack : stacks) {
    const auto frames = d.frames.find(stack);
    ASSERT_NE(frames, d.frames.end()) << "a sample names a stack whose frames no thread wrote";
    const uint16_t depth = frames->second.front().depth;
    EXPECT_EQ(frames->second.size(), (depth + kFramesPerRecord - 1u) / kFramesPerRecord) << "written once";
    EXPECT_EQ(frames->second.front().first, 0u);
  }
}

TEST_F(StackSampler, OneOpInNOnAverageAndEachKindOnceWithWeightsAddingUp) {
  g_settings.stacks = 64;
  static int comm;
  constexpr int kOps = 64'000;
  for (int i = 0; i < kOps; ++i) siteA(&comm);
  siteB(&comm);  // another kind (func): sampled at once
  const Drained d = drain();
  uint64_t weights = 0;
  for (const StackSampleRecord& s : d.samples) weights += s.weight;
  EXPECT_NEAR(static_cast<double>(d.samples.size()), kOps / 64.0, kOps / 64.0 * 0.15);
  EXPECT_EQ(d.samples.back().weight, static_cast<uint32_t>(kOps + 1 - (weights - d.samples.back().weight))) << "it closes the interval";
  EXPECT_LE(weights, static_cast<uint64_t>(kOps) + 1);
  EXPECT_GE(weights, static_cast<uint64_t>(kOps) + 1 - 127);
}

// A stack first met while the thread's ring is full has its frames dropped with its sample:
// the next sample of it writes them, under the id the first one was given.
TEST_F(StackSampler, FramesAFullRingDroppedAreWrittenByTheNextSample) {
  g_settings.stacks = 1;
  static int comms[2];  // each op new to the thread, so sampled whatever the countdown
  for (volatile int round = 0; round < 2; ++round) {  // volatile: not unrolled into two call sites
    if (round == 0)
      while (record(ClockSampleRecord{}) != PushResult::kDropped) {
      }
    siteB(&comms[round]);  // one call site, one stack: new to the process in round 0, its records dropped
    if (round == 0) drain();
  }
  const Drained d = drain();
  ASSERT_EQ(d.samples.size(), 1u);
  EXPECT_TRUE(d.frames.contains(d.samples[0].stack)) << "the stack's frames were written again";
}

TEST_F(StackSampler, OffAtZero) {
  g_settings.stacks = 0;
  static int comm;
  for (int i = 0; i < 100; ++i) siteA(&comm);
  EXPECT_TRUE(drain().samples.empty());
}

}  // namespace
}  // namespace commtrace::interpose
