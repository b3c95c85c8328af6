// RingRegistry: the life of a thread's ring from its first record to being freed after
// its thread exits, as the one consumer (here the test, standing in for the flusher)
// sees it through forEachRing.
#include "ringbuffer/ring_registry.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <latch>
#include <thread>
#include <utility>
#include <vector>

#include "ringbuffer/ringbuffer.h"

namespace commtrace {
namespace {

using DropReport = std::pair<RecordKind, uint64_t>;

// What one forEachRing pass saw: every ring is drained; the watched thread's ring is
// described in detail.
struct Pass {
  size_t rings = 0;
  bool saw_watched = false;
  bool watched_retired = false;
  uint32_t watched_capacity = 0;
  std::vector<uint64_t> watched_numbers;  // op_index of P2p, seq of Coll, in drain order
  std::vector<DropReport> watched_drops;
};

Pass consumerPass(uint32_t watched_tid = 0) {
  Pass pass;
  RingRegistry::global().forEachRing([&](ThreadRing& ring) {
    ++pass.rings;
    const bool watched = ring.thread() == watched_tid;
    if (watched) {
      pass.saw_watched = true;
      pass.watched_retired = ring.retired();
      pass.watched_capacity = ring.capacity();
    }
    ring.drain([&](const RecordSlot& slot) {
      if (!watched) return;
      pass.watched_numbers.push_back(slot.kind == RecordKind::kP2p ? slot.payload.p2p.op_index
                                                                    : slot.payload.coll.seq);
    });
    ring.forEachNewDropCount([&](RecordKind kind, uint64_t n) {
      if (watched) pass.watched_drops.emplace_back(kind, n);
    });
  });
  return pass;
}

// Rings alive now, after freeing those left over by earlier tests.
size_t settledRingCount() {
  consumerPass();
  return consumerPass().rings;
}

void recordP2p(uint64_t from, uint64_t to) {
  for (uint64_t i = from; i < to; ++i) {
    P2pRecord r{};
    r.op_index = i;
    record(r);
  }
}

std::vector<uint64_t> iota(uint64_t from, uint64_t to) {
  std::vector<uint64_t> out;
  for (uint64_t i = from; i < to; ++i) out.push_back(i);
  return out;
}

// Runs body on a new thread to its exit; returns that thread's tid.
template <class Body>
uint32_t runThreadToExit(Body body) {
  uint32_t tid = 0;
  std::thread([&] {
    tid = static_cast<uint32_t>(gettid());
    body();
  }).join();
  return tid;
}

TEST(RingRegistryTest, ExitedThreadsRecordsAreDrainedThenItsRingIsFreed) {
  const size_t before = settledRingCount();
  const uint32_t tid = runThreadToExit([] { recordP2p(0, 100); });

  const Pass drain = consumerPass(tid);
  EXPECT_EQ(drain.rings, before + 1);
  ASSERT_TRUE(drain.saw_watched) << "the ring of an exited thread must still be visited";
  EXPECT_TRUE(drain.watched_retired);
  EXPECT_EQ(drain.watched_numbers, iota(0, 100));

  const Pass after = consumerPass(tid);
  EXPECT_FALSE(after.saw_watched);
  EXPECT_EQ(after.rings, before) << "a drained retired ring is freed";
}

TEST(RingRegistryTest, LiveThreadsRingIsKeptAndItsLastRecordsDrainedAfterExit) {
  const size_t before = settledRingCount();
  std::latch first_batch_recorded(1), consumer_done(1);
  uint32_t tid = 0;
  std::thread producer([&] {
    tid = static_cast<uint32_t>(gettid());
    recordP2p(0, 5);
    first_batch_recorded.count_down();
    consumer_done.wait();
    recordP2p(5, 10);  // the last records before exit
  });

  first_batch_recorded.wait();
  const Pass live = consumerPass(tid);
  EXPECT_EQ(live.rings, before + 1);
  EXPECT_FALSE(live.watched_retired);
  EXPECT_EQ(live.watched_numbers, iota(0, 5));
  const Pass idle = consumerPass(tid);
  EXPECT_TRUE(idle.saw_watched) << "an empty ring of a live thread is kept";
  EXPECT_TRUE(idle.watched_numbers.empty());

  consumer_done.count_down();
  producer.join();
  const Pass last = consumerPass(tid);
  EXPECT_TRUE(last.watched_retired);
  EXPECT_EQ(last.watched_numbers, iota(5, 10));
  EXPECT_EQ(consumerPass(tid).rings, before);
}

TEST(RingRegistryTest, ThreadsDropsAreVisibleOnItsRing) {
  const uint32_t saved_records = RingRegistry::global().ringRecords();
  RingRegistry::global().setRingRecords(8);
  uint64_t dropped_by_producer = 0;
  const uint32_t tid = runThreadToExit([&] {
    for (uint64_t i = 0; i < 20; ++i) {
      CollRecord r{};
      r.seq = i;
      if (record(r) == PushResult::kDropped) ++dropped_by_producer;
    }
  });
  RingRegistry::global().setRingRecords(saved_records);

  const Pass pass = consumerPass(tid);
  ASSERT_TRUE(pass.saw_watched);
  EXPECT_EQ(pass.watched_capacity, 8u);
  EXPECT_EQ(dropped_by_producer, 12u);
  EXPECT_EQ(pass.watched_numbers, iota(0, 8)) << "the first records stay, the later ones drop";
  EXPECT_EQ(pass.watched_drops, (std::vector<DropReport>{{RecordKind::kColl, 12}}));
}

// A thread that records once and exits (a pool's, a per-request thread's) leaves its ring to
// the next: drained, empty, its drop counts at zero, named by the new thread; no new
// mapping, no new memory.
TEST(RingRegistryTest, AnExitedThreadsRingIsTheNextThreadsDrainedAndEmpty) {
  settledRingCount();
  const uint32_t first = runThreadToExit([] {
    CollRecord r{};
    r.seq = 7;
    record(r);
  });
  EXPECT_EQ(consumerPass(first).watched_numbers, iota(7, 8));
  const uint64_t memory = RingRegistry::global().ringMemory();
  uint64_t pushed_first = 0;
  const uint32_t second = runThreadToExit([&] {
    CollRecord r{};
    r.seq = 9;
    pushed_first = record(r) == PushResult::kStored ? 1 : 0;
  });
  EXPECT_EQ(pushed_first, 1u);
  EXPECT_EQ(RingRegistry::global().ringMemory(), memory) << "a spare was taken, nothing new mapped";
  const Pass pass = consumerPass(second);
  ASSERT_TRUE(pass.saw_watched);
  EXPECT_EQ(pass.watched_numbers, iota(9, 10)) << "only the new thread's record";
  EXPECT_TRUE(pass.watched_drops.empty());
}

// Past COMMTRACE_RING_MEMORY_MB a thread gets no ring: its records are dropped and counted
// process-wide by kind, and it gets one once memory is free again.
TEST(RingRegistryTest, PastTheRingMemoryLimitRecordsAreCountedAsDropped) {
  settledRingCount();
  RingRegistry& registry = RingRegistry::global();
  const uint64_t saved_limit = registry.ringMemoryLimit();
  const uint32_t saved_records = registry.ringRecords();
  registry.setRingRecords(8);  // no spare ring of the earlier tests fits
  registry.setRingMemoryLimit(0);
  const uint64_t before = registry.ringlessDrops(RecordKind::kColl);
  std::vector<PushResult> results;
  runThreadToExit([&] {
    CollRecord r{};
    results.push_back(record(r));
    results.push_back(record(r));
    registry.setRingMemoryLimit(saved_limit);
    results.push_back(record(r));
  });
  EXPECT_EQ(results, (std::vector<PushResult>{PushResult::kDropped, PushResult::kDropped, PushResult::kStored}));
  EXPECT_EQ(registry.ringlessDrops(RecordKind::kColl) - before, 2u);
  registry.setRingRecords(saved_records);
  consumerPass();
}

}  // namespace
}  // namespace commtrace
