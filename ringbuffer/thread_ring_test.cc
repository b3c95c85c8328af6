// ThreadRing and the record() hot path: sizing, order, drop accounting, the half-full
// signal, and that recording never touches the heap once a thread has its ring.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <thread>
#include <utility>
#include <vector>

#include "ringbuffer/ringbuffer.h"
#include "ringbuffer/thread_ring.h"

// ---- Allocation counting -------------------------------------------------------------
// Counts heap allocations made by the current thread while t_counting is set. Sanitizer
// runtimes own malloc, so there we use their allocation hook; otherwise this binary
// replaces malloc and its siblings (operator new in libstdc++ calls malloc, so every
// C++ allocation lands here too) and forwards to glibc's implementation.

namespace {
thread_local bool t_counting = false;
thread_local uint64_t t_allocations = 0;
void noteAllocation() {
  if (t_counting) ++t_allocations;
}
}  // namespace

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CT_SANITIZER_ALLOCATOR 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define CT_SANITIZER_ALLOCATOR 1
#endif
#endif

#ifdef CT_SANITIZER_ALLOCATOR
extern "C" int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void*, size_t),
                                                         void (*free_hook)(const volatile void*));
namespace {
const bool g_hooks_installed = [] {
  // The runtime refuses a null hook, so free gets one that does nothing.
  return __sanitizer_install_malloc_and_free_hooks([](const volatile void*, size_t) { noteAllocation(); },
                                                   [](const volatile void*) {}) != 0;
}();
}  // namespace
#else
extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);

void* malloc(size_t n) {
  noteAllocation();
  return __libc_malloc(n);
}
void* calloc(size_t count, size_t n) {
  noteAllocation();
  return __libc_calloc(count, n);
}
void* realloc(void* p, size_t n) {
  noteAllocation();
  return __libc_realloc(p, n);
}
void* memalign(size_t alignment, size_t n) {
  noteAllocation();
  return __libc_memalign(alignment, n);
}
void* aligned_alloc(size_t alignment, size_t n) {
  noteAllocation();
  return __libc_memalign(alignment, n);
}
int posix_memalign(void** out, size_t alignment, size_t n) {
  noteAllocation();
  if (alignment < sizeof(void*) || (alignment & (alignment - 1)) != 0) return EINVAL;
  void* p = __libc_memalign(alignment, n);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}
}  // extern "C"
namespace {
const bool g_hooks_installed = true;
}  // namespace
#endif

namespace commtrace {
namespace {

// Heap allocations the calling thread makes while running f.
template <class F>
uint64_t allocationsDuring(F&& f) {
  t_allocations = 0;
  t_counting = true;
  std::forward<F>(f)();
  t_counting = false;
  return t_allocations;
}

P2pRecord p2p(uint64_t op_index) {
  P2pRecord r{};
  r.op_index = op_index;
  return r;
}

CollRecord coll(uint64_t seq) {
  CollRecord r{};
  r.seq = seq;
  return r;
}

// The identifying number of a drained P2p (op_index) or Coll (seq) record.
uint64_t numberOf(const RecordSlot& slot) {
  return slot.kind == RecordKind::kP2p ? slot.payload.p2p.op_index : slot.payload.coll.seq;
}

std::vector<RecordSlot> drainAll(ThreadRing& ring) {
  std::vector<RecordSlot> out;
  const uint64_t n = ring.drain([&](const RecordSlot& slot) { out.push_back(slot); });
  EXPECT_EQ(n, out.size());
  return out;
}

std::vector<uint64_t> numbers(const std::vector<RecordSlot>& slots) {
  std::vector<uint64_t> out;
  for (const RecordSlot& slot : slots) out.push_back(numberOf(slot));
  return out;
}

std::vector<uint64_t> iota(uint64_t from, uint64_t to) {
  std::vector<uint64_t> out;
  for (uint64_t i = from; i < to; ++i) out.push_back(i);
  return out;
}

using DropReport = std::pair<RecordKind, uint64_t>;

std::vector<DropReport> newDropCounts(ThreadRing& ring) {
  std::vector<DropReport> out;
  ring.forEachNewDropCount([&](RecordKind kind, uint64_t cumulative) { out.emplace_back(kind, cumulative); });
  return out;
}

TEST(ThreadRingTest, CapacityRoundsUpToPowerOfTwo) {
  const std::pair<uint32_t, uint32_t> cases[] = {{0, 2}, {1, 2}, {2, 2}, {3, 4}, {8, 8}, {1000, 1024}, {1024, 1024}, {1025, 2048}};
  for (const auto& [asked, expected] : cases) {
    EXPECT_EQ(ThreadRing(asked, 1).capacity(), expected) << "asked for " << asked;
  }
}

// Pushes record number n: even numbers as P2p, odd ones as Coll, so order is checked
// across kinds too.
PushResult pushNumbered(ThreadRing& ring, uint64_t n) {
  return n % 2 == 0 ? ring.push(p2p(n)) : ring.push(coll(n));
}

TEST(ThreadRingTest, DrainReturnsRecordsInPushOrderAcrossWrapAround) {
  ThreadRing ring(8, 4242);
  uint64_t next = 0;
  // Rounds of 5 pushes into 8 slots: the slot index wraps on the second round.
  for (int round = 0; round < 4; ++round) {
    const uint64_t first = next;
    for (int i = 0; i < 5; ++i, ++next) ASSERT_NE(pushNumbered(ring, next), PushResult::kDropped);
    const std::vector<RecordSlot> drained = drainAll(ring);
    EXPECT_EQ(numbers(drained), iota(first, next)) << "round " << round;
    for (const RecordSlot& slot : drained) {
      EXPECT_EQ(slot.kind, numberOf(slot) % 2 == 0 ? RecordKind::kP2p : RecordKind::kColl);
      EXPECT_EQ(slot.thread, 4242u) << "the ring stamps its thread";
    }
  }
  EXPECT_TRUE(drainAll(ring).empty());
}

TEST(ThreadRingTest, FullRingDropsAndCountsPerKindWithoutOverwriting) {
  ThreadRing ring(8, 1);
  for (uint64_t i = 0; i < 8; ++i) ASSERT_NE(ring.push(coll(i)), PushResult::kDropped) << i;

  for (uint64_t i = 100; i < 103; ++i) EXPECT_EQ(ring.push(coll(i)), PushResult::kDropped);
  for (uint64_t i = 200; i < 205; ++i) EXPECT_EQ(ring.push(p2p(i)), PushResult::kDropped);
  EXPECT_EQ(ring.dropped(RecordKind::kColl), 3u);
  EXPECT_EQ(ring.dropped(RecordKind::kP2p), 5u);
  EXPECT_EQ(ring.dropped(RecordKind::kKernelCh), 0u);

  EXPECT_EQ(numbers(drainAll(ring)), iota(0, 8)) << "dropped records must not replace stored ones";

  // Drained, the ring stores again; the counts are cumulative.
  EXPECT_NE(ring.push(p2p(300)), PushResult::kDropped);
  EXPECT_EQ(numbers(drainAll(ring)), std::vector<uint64_t>{300});
  EXPECT_EQ(ring.dropped(RecordKind::kColl), 3u);
  EXPECT_EQ(ring.dropped(RecordKind::kP2p), 5u);
}

// The fill (1-based) at which each push returned kStoredHalfFull, for pushes into an
// empty ring until it is full.
std::vector<uint32_t> halfFullSignalsWhileFilling(ThreadRing& ring) {
  std::vector<uint32_t> signalled_at;
  for (uint32_t fill = 1; fill <= ring.capacity(); ++fill) {
    const PushResult result = ring.push(p2p(fill));
    EXPECT_NE(result, PushResult::kDropped) << "fill " << fill;
    if (result == PushResult::kStoredHalfFull) signalled_at.push_back(fill);
  }
  return signalled_at;
}

TEST(ThreadRingTest, HalfFullIsSignalledExactlyWhenFillReachesHalf) {
  ThreadRing ring(16, 1);
  EXPECT_EQ(halfFullSignalsWhileFilling(ring), std::vector<uint32_t>{8});
  EXPECT_EQ(ring.push(p2p(99)), PushResult::kDropped) << "no signal on the drop path";

  // After a drain the producer sees the ring empty again and signals at half once more.
  EXPECT_EQ(drainAll(ring).size(), 16u);
  EXPECT_EQ(halfFullSignalsWhileFilling(ring), std::vector<uint32_t>{8});
}

// The producer checks for half full against its cached view of the tail, refreshed only when
// the ring looks full. A refresh that finds the ring still past half must ask for a drain,
// or the flusher would sleep through that lap.
TEST(ThreadRingTest, HalfFullIsSignalledWhenARefreshFindsTheRingPastHalf) {
  ThreadRing ring(16, 1);
  for (uint64_t i = 0; i < 4; ++i) ring.push(p2p(i));
  ASSERT_EQ(drainAll(ring).size(), 4u);  // the producer has not seen this drain yet
  for (uint64_t i = 4; i < 16; ++i) ring.push(p2p(i));
  EXPECT_EQ(ring.push(p2p(16)), PushResult::kStoredHalfFull) << "13 of 16 slots in use after the refresh";
}

TEST(ThreadRingTest, ForEachNewDropCountReportsOnlyChanges) {
  ThreadRing ring(2, 1);
  ring.push(p2p(0));
  ring.push(p2p(1));
  EXPECT_TRUE(newDropCounts(ring).empty()) << "nothing dropped yet";

  ring.push(coll(2));
  ring.push(coll(3));
  ring.push(p2p(4));
  EXPECT_EQ(newDropCounts(ring), (std::vector<DropReport>{{RecordKind::kColl, 2}, {RecordKind::kP2p, 1}}));
  EXPECT_TRUE(newDropCounts(ring).empty()) << "unchanged counts are not reported again";

  ring.push(coll(5));
  EXPECT_EQ(newDropCounts(ring), (std::vector<DropReport>{{RecordKind::kColl, 3}}));
}

TEST(RecordTest, NoHeapAllocationAfterTheFirstRecord) {
  ASSERT_TRUE(g_hooks_installed);
  // Enough pushes to store, signal half full (a doorbell futex) and then drop: no
  // consumer runs in this test, so the thread's ring fills up.
  const uint64_t pushes = 3ull * RingRegistry::global().ringRecords();
  uint64_t first_allocations = 0, later_allocations = 0;
  uint64_t results[3] = {};
  std::thread producer([&] {
    first_allocations = allocationsDuring([] { record(p2p(0)); });
    later_allocations = allocationsDuring([&] {
      for (uint64_t i = 1; i < pushes; ++i) ++results[static_cast<int>(record(p2p(i)))];
    });
  });
  producer.join();

  EXPECT_GT(first_allocations, 0u) << "the first record allocates the thread's ring; a counter "
                                      "that misses it proves nothing";
  EXPECT_EQ(later_allocations, 0u);
  EXPECT_GT(results[static_cast<int>(PushResult::kStored)], 0u);
  EXPECT_EQ(results[static_cast<int>(PushResult::kStoredHalfFull)], 1u);
  EXPECT_GT(results[static_cast<int>(PushResult::kDropped)], 0u);
}

}  // namespace
}  // namespace commtrace
