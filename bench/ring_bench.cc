// What one record costs on the hot path, and the queue we compared it with (issue #2).
//
//   BM_Record             commtrace::record(CollRecord) with a real Flusher writing to a
//                         temp dir: the number every face pays, timestamp excluded.
//   BM_RecordStamped      the same with cpu_start_ns = nowNs(): what a face really pays.
//   BM_RecordDrainOnly    record() with the drain-only consumer below instead of the Flusher:
//                         what record() adds to ThreadRing::push, without encoding next door.
//   BM_ThreadRingPush     ThreadRing::push with a drain-only consumer thread,
//   BM_MoodycamelEnqueue  moodycamel try_enqueue(thread-local ProducerToken) on pre-allocated
//                         capacity with the same drain-only consumer: the comparison behind
//                         the choice of ring. The consumer drains, then sleeps 50 us when empty.
//   BM_NowNs, BM_Rdtsc,   the clock reads a record needs: nowNs() on the TSC, a bare rdtsc,
//   BM_ClockGettime...    and the vDSO's clock_gettime nowNs() falls back to.
//
// How a push is timed without drops flattering it: a producer times a batch of pushes
// (3/4 of its queue's capacity) back to back, then, untimed, waits until the consumer has
// taken everything. A batch never overfills an empty queue, so no push in it can drop
// unless the consumer falls behind, and every dropped push is counted ("drops", summed over
// threads; it must read 0). With the real Flusher the push that takes the ring to half full
// rings the doorbell ("doorbells": one per batch), so the Flusher drains and encodes while
// the last third of the batch is pushed.
//
// "ns_per_push" is each producer's timed wall nanoseconds over its pushes, averaged over
// threads; "cpu_ns_per_push" the same in the thread's CPU time, which leaves out time spent
// descheduled (2 producers and the Flusher on 2 cores). Google Benchmark's own time column
// is per iteration of all threads together (wall / total pushes), so with 2 threads it is
// about half the per-producer cost; read ns_per_push. Its CPU column includes the untimed
// waits and means nothing here.
#include <benchmark/benchmark.h>
#include <concurrentqueue.h>
#include <stdlib.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench/main_with_run_dir.h"
#include "core/clock.h"
#include "core/tsc_clock.h"
#include "ringbuffer/ringbuffer.h"
#include "sink/flusher.h"

namespace commtrace {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kQueueRecords = RingRegistry::kDefaultRingRecords;
constexpr uint32_t kBatch = kQueueRecords / 4 * 3;
constexpr int kBatchesPerRun = 100;
constexpr int kMaxProducers = 2;
constexpr auto kWaitLimit = std::chrono::seconds(5);

// CPU time of the calling thread: unlike wall time, it leaves out the time the thread
// spent descheduled (2 producers and the Flusher share 2 cores).
uint64_t threadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

CollRecord sampleCollRecord() {
  CollRecord r{};
  r.comm_id = 0x5A17D3C2B1A09F81ull;
  r.count = 1'572'864;
  r.bytes = 3'145'728;
  r.stream = 0x7f3a10000000ull;
  r.cpu_start_ns = 1'000'000'000;
  r.cpu_end_ns = 1'000'005'000;
  r.func = StringTable::global().intern("AllGather");
  r.datatype = StringTable::global().intern("ncclBfloat16");
  r.algo = StringTable::global().intern("RING");
  r.proto = StringTable::global().intern("SIMPLE");
  r.root = -1;
  r.n_channels = 16;
  r.n_warps = 16;
  return r;
}

// Where producers announce what they push and wait for the consumer to take it. A batch
// is announced before it is pushed (and its drops taken back after), so whatever the
// consumer has drained was announced; a waiting producer compares drained with what is
// announced now (not when it started waiting), so another producer's batch drained in the
// meantime can never stand in for its own.
class Pipeline {
 public:
  virtual ~Pipeline() = default;
  void announce(uint64_t n) { announced_.fetch_add(n, std::memory_order_relaxed); }
  void retract(uint64_t n) { announced_.fetch_sub(n, std::memory_order_relaxed); }
  // false if the consumer did not catch up within kWaitLimit.
  bool waitDrained() {
    const auto deadline = Clock::now() + kWaitLimit;
    while (drainedLowerBound() + slack() < announced_.load(std::memory_order_relaxed)) {
      if (Clock::now() > deadline) return false;
      nudge();
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    return true;
  }
  void reset() { announced_ = 0; }

 protected:
  virtual uint64_t drainedLowerBound() const = 0;
  virtual uint64_t slack() const { return 0; }
  virtual void nudge() {}

 private:
  std::atomic<uint64_t> announced_{0};
};

// What one producer timed; reported as per-thread averages and sums.
struct ProducerTally {
  double timed_ns = 0;
  double cpu_ns = 0;
  uint64_t pushes = 0;
  uint64_t drops = 0;

  void report(benchmark::State& state) const {
    const double n = pushes ? static_cast<double>(pushes) : 1;
    state.counters["ns_per_push"] = benchmark::Counter(timed_ns / n, benchmark::Counter::kAvgThreads);
    state.counters["cpu_ns_per_push"] = benchmark::Counter(cpu_ns / n, benchmark::Counter::kAvgThreads);
    state.counters["drops"] = benchmark::Counter(static_cast<double>(drops));
  }
};

// pushBatch(n) pushes n records and returns how many of them dropped.
template <class PushBatch>
void runBatches(benchmark::State& state, Pipeline& pipeline, uint32_t batch, PushBatch&& pushBatch) {
  ProducerTally tally;
  while (state.KeepRunningBatch(batch)) {
    pipeline.announce(batch);
    const uint64_t cpu0 = threadCpuNs();
    const auto t0 = Clock::now();
    const uint64_t drops = pushBatch(batch);
    const auto t1 = Clock::now();
    const uint64_t cpu1 = threadCpuNs();
    pipeline.retract(drops);
    const double ns = std::chrono::duration<double, std::nano>(t1 - t0).count();
    state.SetIterationTime(ns * 1e-9);
    tally.timed_ns += ns;
    tally.cpu_ns += static_cast<double>(cpu1 - cpu0);
    tally.pushes += batch;
    tally.drops += drops;
    if (!pipeline.waitDrained()) {
      state.SkipWithError("consumer did not drain within 5 s");
      break;
    }
  }
  tally.report(state);
}

// ---------------------------------------------------------------------------------------
// The real hot path with the real Flusher.

std::string g_run_dir;
std::unique_ptr<Flusher> g_flusher;

// Each drain that writes rows adds one ClockSample row and one chunk, plus one more chunk
// per 16384 rows when a drain of both rings cuts a chunk; so records_written -
// chunks_written is our records written minus at most one per chunk cut (about 150 per
// run). The slack covers that, and a batch plus the slack still fits an empty ring.
class FlusherPipeline final : public Pipeline {
  static constexpr uint64_t kSlack = 1024;
  static_assert(kBatch + kSlack < kQueueRecords);

  uint64_t drainedLowerBound() const override {
    const FlusherStats s = g_flusher->stats();
    return s.records_written - s.chunks_written;
  }
  uint64_t slack() const override { return kSlack; }
  void nudge() override { RingRegistry::global().doorbell().ring(); }
};
FlusherPipeline g_flusher_pipeline;

void startFlusher(const benchmark::State&) {
  g_flusher_pipeline.reset();
  FlusherOptions options;
  options.dir = g_run_dir;
  g_flusher = std::make_unique<Flusher>(options);
  if (!g_flusher->start()) std::fprintf(stderr, "ring_bench: a Flusher is already running\n");
}

void stopFlusher(const benchmark::State&) {
  g_flusher->stop();
  const FlusherStats stats = g_flusher->stats();
  if (stats.sinkFailedTotal() != 0) {
    std::fprintf(stderr, "ring_bench: the flusher failed to write %llu records\n",
                 static_cast<unsigned long long>(stats.sinkFailedTotal()));
  }
  g_flusher.reset();
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(g_run_dir, ec)) std::filesystem::remove(entry.path(), ec);
}

template <bool kStamp>
void recordBench(benchmark::State& state) {
  CollRecord r = sampleCollRecord();
  // The first record registers the thread's ring (allocation, page touching): untimed.
  if (RingRegistry::currentThreadRing() == nullptr) {
    g_flusher_pipeline.announce(1);
    if (record(r) == PushResult::kDropped) g_flusher_pipeline.retract(1);
  }
  const ThreadRing* ring = RingRegistry::currentThreadRing();
  if (ring == nullptr) {
    state.SkipWithError("no ring");
    return;
  }
  uint64_t seq = 0, doorbells = 0;
  runBatches(state, g_flusher_pipeline, kBatch, [&](uint32_t batch) {
    const uint64_t drops_before = ring->dropped(RecordKind::kColl);
    for (uint32_t i = 0; i < batch; ++i) {
      r.seq = seq++;
      if constexpr (kStamp) r.cpu_start_ns = nowNs();
      doorbells += record(r) == PushResult::kStoredHalfFull;
    }
    return ring->dropped(RecordKind::kColl) - drops_before;
  });
  // Timed pushes that rang the doorbell (woke the Flusher), summed over threads.
  state.counters["doorbells"] = static_cast<double>(doorbells);
}

void BM_Record(benchmark::State& state) { recordBench<false>(state); }
void BM_RecordStamped(benchmark::State& state) { recordBench<true>(state); }

BENCHMARK(BM_Record)
    ->Setup(startFlusher)->Teardown(stopFlusher)
    ->UseManualTime()->Iterations(kBatch * kBatchesPerRun)->ThreadRange(1, kMaxProducers);
BENCHMARK(BM_RecordStamped)
    ->Setup(startFlusher)->Teardown(stopFlusher)
    ->UseManualTime()->Iterations(kBatch * kBatchesPerRun)->ThreadRange(1, kMaxProducers);

// ---------------------------------------------------------------------------------------
// The hot path in a sustained stream: each producer pushes a burst of kPacedBurst records
// every kPacedPeriod (500k records/s per producer, 1M/s with two) for about a second,
// with the real Flusher draining on its own schedule (its period, or the doorbell at half a
// ring), not forced to run next to every push as in BM_Record. Each burst is timed; the
// counters are the median, 90th and 99th percentile of ns per push over all bursts, so
// the bursts that overlap the Flusher's encoding show in the tail, not hidden in a mean.

constexpr uint32_t kPacedBurst = 32;
constexpr auto kPacedPeriod = std::chrono::microseconds(64);
constexpr int kPacedBursts = 15625;  // ~1 s

double percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(k), v.end());
  return v[k];
}

void BM_RecordPaced(benchmark::State& state) {
  CollRecord r = sampleCollRecord();
  record(r);  // registers the thread's ring, untimed
  const ThreadRing* ring = RingRegistry::currentThreadRing();
  std::vector<double> per_push;
  per_push.reserve(kPacedBursts);
  uint64_t drops = 0;
  for (auto _ : state) {
    const uint64_t drops_before = ring->dropped(RecordKind::kColl);
    auto next = Clock::now();
    for (int b = 0; b < kPacedBursts; ++b) {
      std::this_thread::sleep_until(next += kPacedPeriod);
      const auto t0 = Clock::now();
      for (uint32_t i = 0; i < kPacedBurst; ++i) {
        ++r.seq;
        record(r);
      }
      per_push.push_back(std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / kPacedBurst);
    }
    drops += ring->dropped(RecordKind::kColl) - drops_before;
  }
  state.counters["p50_ns"] = benchmark::Counter(percentile(per_push, 0.50), benchmark::Counter::kAvgThreads);
  state.counters["p90_ns"] = benchmark::Counter(percentile(per_push, 0.90), benchmark::Counter::kAvgThreads);
  state.counters["p99_ns"] = benchmark::Counter(percentile(per_push, 0.99), benchmark::Counter::kAvgThreads);
  state.counters["drops"] = benchmark::Counter(static_cast<double>(drops));
}
BENCHMARK(BM_RecordPaced)
    ->Setup(startFlusher)->Teardown(stopFlusher)
    ->Iterations(1)->UseRealTime()->ThreadRange(1, kMaxProducers)->Unit(benchmark::kMillisecond);

// ---------------------------------------------------------------------------------------
// Queue against queue, with the same drain-only consumer: ThreadRing and moodycamel.

// Reads all 128 bytes of a slot, as a consumer that encodes it does: touching only the
// first cache line would leave the second in the producer's cache and flatter the ring.
inline uint64_t readSlot(const RecordSlot& s) {
  uint64_t words[sizeof(RecordSlot) / 8];
  std::memcpy(words, &s, sizeof words);
  uint64_t sum = 0;
  for (uint64_t w : words) sum += w;
  return sum;
}

// Drains with drainOnce() until stopped; sleeps 50 us whenever a pass found nothing.
class DrainOnlyConsumer final : public Pipeline {
 public:
  template <class DrainOnce>
  void start(DrainOnce drainOnce) {
    reset();
    drained_ = 0;
    stop_ = false;
    thread_ = std::thread([this, drainOnce]() mutable {
      uint64_t checksum = 0;
      while (!stop_.load(std::memory_order_acquire)) {
        const uint64_t n = drainOnce(checksum);
        if (n == 0) {
          std::this_thread::sleep_for(std::chrono::microseconds(50));
        } else {
          drained_.fetch_add(n, std::memory_order_release);
        }
      }
      benchmark::DoNotOptimize(checksum);
    });
  }
  void stop() {
    stop_ = true;
    thread_.join();
  }

 private:
  uint64_t drainedLowerBound() const override { return drained_.load(std::memory_order_acquire); }

  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> drained_{0};
};

DrainOnlyConsumer g_consumer;

// One ring per benchmark thread index; runs are sequential, so each stays single-producer.
std::array<std::unique_ptr<ThreadRing>, kMaxProducers> g_rings;

void startRingConsumer(const benchmark::State&) {
  for (uint32_t i = 0; i < kMaxProducers; ++i) {
    if (!g_rings[i]) g_rings[i] = std::make_unique<ThreadRing>(kQueueRecords, 1000 + i);
  }
  g_consumer.start([](uint64_t& checksum) {
    uint64_t n = 0;
    for (auto& ring : g_rings) n += ring->drain([&](const RecordSlot& s) { checksum += readSlot(s); });
    return n;
  });
}

void stopConsumer(const benchmark::State&) { g_consumer.stop(); }

// record() through the global registry, drained by the drain-only consumer instead of the
// Flusher: separates what record() adds to ThreadRing::push from what the Flusher's
// encoding next door costs the producer.
void startRegistryConsumer(const benchmark::State&) {
  g_consumer.start([](uint64_t& checksum) {
    uint64_t n = 0;
    RingRegistry::global().forEachRing([&](ThreadRing& ring) {
      n += ring.drain([&](const RecordSlot& s) { checksum += readSlot(s); });
    });
    return n;
  });
}

void BM_RecordDrainOnly(benchmark::State& state) {
  CollRecord r = sampleCollRecord();
  if (RingRegistry::currentThreadRing() == nullptr) {
    g_consumer.announce(1);
    if (record(r) == PushResult::kDropped) g_consumer.retract(1);
  }
  const ThreadRing* ring = RingRegistry::currentThreadRing();
  uint64_t seq = 0;
  runBatches(state, g_consumer, kBatch, [&](uint32_t batch) {
    const uint64_t drops_before = ring->dropped(RecordKind::kColl);
    for (uint32_t i = 0; i < batch; ++i) {
      r.seq = seq++;
      record(r);
    }
    return ring->dropped(RecordKind::kColl) - drops_before;
  });
}
BENCHMARK(BM_RecordDrainOnly)
    ->Setup(startRegistryConsumer)->Teardown(stopConsumer)
    ->UseManualTime()->Iterations(kBatch * kBatchesPerRun)->ThreadRange(1, kMaxProducers);

void BM_ThreadRingPush(benchmark::State& state) {
  ThreadRing& ring = *g_rings[static_cast<size_t>(state.thread_index())];
  CollRecord r = sampleCollRecord();
  uint64_t seq = 0;
  runBatches(state, g_consumer, kBatch, [&](uint32_t batch) {
    const uint64_t drops_before = ring.dropped(RecordKind::kColl);
    for (uint32_t i = 0; i < batch; ++i) {
      r.seq = seq++;
      ring.push(r);
    }
    return ring.dropped(RecordKind::kColl) - drops_before;
  });
}
BENCHMARK(BM_ThreadRingPush)
    ->Setup(startRingConsumer)->Teardown(stopConsumer)
    ->UseManualTime()->Iterations(kBatch * kBatchesPerRun)->ThreadRange(1, kMaxProducers);

// moodycamel as hpc-tracing.md §3.3 says it must be used: explicit producer tokens,
// capacity pre-allocated by the 3-argument constructor, try_enqueue (never allocates).
moodycamel::ConcurrentQueue<RecordSlot>& moodycamelQueue() {
  static auto* queue = [] {
    auto* q = new moodycamel::ConcurrentQueue<RecordSlot>(kQueueRecords, kMaxProducers, 0);
    // Fault in every block once, with all producers alive at the same time, exactly
    // kQueueRecords each: explicit producers never return blocks to the pool, so one that
    // filled until failure would keep every block and starve the others.
    std::array<std::unique_ptr<moodycamel::ProducerToken>, kMaxProducers> tokens;
    RecordSlot slot{};
    for (auto& token : tokens) {
      token = std::make_unique<moodycamel::ProducerToken>(*q);
      for (uint32_t i = 0; i < kQueueRecords && q->try_enqueue(*token, slot); ++i) {
      }
    }
    while (q->try_dequeue(slot)) {
    }
    return q;
  }();
  return *queue;
}

void startMoodycamelConsumer(const benchmark::State&) {
  moodycamelQueue();
  g_consumer.start([token = std::make_shared<moodycamel::ConsumerToken>(moodycamelQueue()),
                    buffer = std::shared_ptr<RecordSlot[]>(new RecordSlot[256])](uint64_t& checksum) {
    uint64_t n = 0;
    for (size_t got; (got = moodycamelQueue().try_dequeue_bulk(*token, buffer.get(), 256)) != 0;) {
      for (size_t i = 0; i < got; ++i) checksum += readSlot(buffer[i]);
      n += got;
    }
    return n;
  });
}

void BM_MoodycamelEnqueue(benchmark::State& state) {
  auto& queue = moodycamelQueue();
  thread_local moodycamel::ProducerToken token(queue);
  RecordSlot slot{};
  slot.kind = RecordKind::kColl;
  slot.thread = static_cast<uint32_t>(state.thread_index());
  slot.payload.coll = sampleCollRecord();
  uint64_t seq = 0;
  runBatches(state, g_consumer, kBatch, [&](uint32_t batch) {
    uint64_t drops = 0;
    for (uint32_t i = 0; i < batch; ++i) {
      slot.payload.coll.seq = seq++;
      drops += !queue.try_enqueue(token, slot);
    }
    return drops;
  });
}
BENCHMARK(BM_MoodycamelEnqueue)
    ->Setup(startMoodycamelConsumer)->Teardown(stopConsumer)
    ->UseManualTime()->Iterations(kBatch * kBatchesPerRun)->ThreadRange(1, kMaxProducers);

// ---------------------------------------------------------------------------------------
// Clock reads, which the numbers above exclude.

// nowNs() as a record reads it once the flusher has calibrated the TSC clock (here the
// benchmark steers it as the flusher would); "tsc" says whether it reads the TSC.
void BM_NowNs(benchmark::State& state) {
  bool tsc = steerProcessTscClock(200'000'000);
  for (int i = 0; tsc && i < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
    steerProcessTscClock(200'000'000);
  }
  for (auto _ : state) benchmark::DoNotOptimize(nowNs());
  state.counters["tsc"] = tsc ? 1 : 0;
}
BENCHMARK(BM_NowNs);

void BM_ClockGettimeMonotonic(benchmark::State& state) {
  timespec ts;
  for (auto _ : state) {
    clock_gettime(CLOCK_MONOTONIC, &ts);
    benchmark::DoNotOptimize(ts);
  }
}
BENCHMARK(BM_ClockGettimeMonotonic);

#if defined(__x86_64__)
void BM_Rdtsc(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(__rdtsc());
}
BENCHMARK(BM_Rdtsc);
#endif

}  // namespace
}  // namespace commtrace

int main(int argc, char** argv) { return commtrace::bench::mainWithRunDir(argc, argv, commtrace::g_run_dir); }
