// What each NCCL profiler callback costs the thread NCCL calls it on (issue #3: every
// hot-path callback <= 50 ns median). The benchmarks play NCCL 2.28's side of the exported
// ncclProfiler_v5 table for one ungrouped AllReduce on kChannels channels, with KernelCh
// enabled (the default) and the real Flusher draining the records to a temp dir:
//
//   user thread:   start GroupApi (depth 1) -> start CollApi -> start Coll (parent: CollApi)
//                  -> stop Coll -> stop CollApi -> stop GroupApi
//   proxy thread:  per channel: start KernelCh (parent: Coll) -> KernelChStop state -> stop
//                  (the last KernelCh stop completes the op and writes its CollRecord)
//
//   BM_PerCallback             each callback kind timed alone (below), all on one thread
//   BM_PerCallback_ProxyThread the same, the KernelCh callbacks on a second thread, as in NCCL
//   BM_WholeOp                 the 12 callbacks op after op on one thread: ns per op
//   BM_WholeOp_ProxyThread     the user side op after op, and the KernelCh side op after op
//                              on a second thread: ns per op on each
//
// How one callback kind is timed alone. Timing each call costs as much as the call (a
// clock read is ~20 ns here), and "whole sequence minus one callback" cannot be run: an
// op missing a stop never completes. So ops go through the sequence in batches of kBatch:
// each step of the sequence is applied to all ops of the batch in one loop, and that loop
// alone is timed (two clock reads per kBatch calls, their measured cost subtracted). A
// batch's slots (2 x kBatch x 256 B) stay in L1 as one op's do when NCCL runs the
// sequence. Back-to-back calls of one kind overlap less with their neighbours than the
// real interleaving does, so the per-kind figures are a little above their share of
// BM_WholeOp (their sum, op_ns, ~190 ns against ~180 ns): an upper bound, not a flattering one.
//
// Counters, all medians over a run's batches, so that a batch descheduled on the 2 cores
// (shared with the Flusher and, in the proxy variants, the second thread) does not move
// them: `<kind>_ns` ns per call of that kind only (kch_start, kch_state and kch_stop are
// averaged over channels; kch_last_stop is the stop that completes the op and writes the
// record, kch_stop the others); `op_ns` ns per op (per-kind variants: the per-kind medians
// summed over one op's calls); `user_op_ns` and `proxy_op_ns` the user side's and the
// KernelCh side's share. `drops` counts records the rings dropped and `untracked` Coll
// starts the plugin gave no handle: both must read 0 (a NULL handle would make the rest of
// the op free). `flusher_waits`: batches that waited, untimed, for the Flusher to catch up.
// Google Benchmark's time column is the mean timed ns per op (user side only with a proxy
// thread), outliers included: read the counters.
//
//   build-bench/bin/plugin_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench/main_with_run_dir.h"
#include "core/clock.h"
#include "nccl-plugin/in_flight_report.h"
#include "nccl-plugin/profiler_abi.h"
#include "ringbuffer/ringbuffer.h"
#include "sink/flusher.h"

extern "C" {
extern const commtrace::nccl::ProfilerV5 ncclProfiler_v5;
}

namespace commtrace {
namespace {

using Clock = std::chrono::steady_clock;
namespace cn = nccl;

constexpr int kChannels = 2;
constexpr uint32_t kBatch = 32;
constexpr uint32_t kOpsPerRun = 64 * 1024;
constexpr uint32_t kWarmupBatches = 64;  // registers the rings, warms slots and caches
constexpr uint32_t kProxyQueueBatches = 8;
constexpr uint64_t kCommId = 0x5A17D3C2B1A09F81ull;

// The steps of the sequence, in NCCL's order; a sample is ns per call of one step.
enum Step : int {
  kGroupApiStart,
  kCollApiStart,
  kCollStart,
  kCollStop,
  kCollApiStop,
  kGroupApiStop,
  kKernelChStart,
  kKernelChState,
  kKernelChStop,
  kKernelChLastStop,
  kStepCount
};
constexpr const char* kStepNames[kStepCount] = {"group_api_start", "coll_api_start", "coll_start",
                                                "coll_stop",       "coll_api_stop",  "group_api_stop",
                                                "kch_start",       "kch_state",      "kch_stop",
                                                "kch_last_stop"};
// How many calls of each step one op makes.
constexpr int kCallsPerOp[kStepCount] = {1, 1, 1, 1, 1, 1, kChannels, kChannels, kChannels - 1, 1};

double nsBetween(Clock::time_point t0, Clock::time_point t1) {
  return std::chrono::duration<double, std::nano>(t1 - t0).count();
}

// The cost of the two clock reads around a timed loop, subtracted from every sample.
double timerOverheadNs() {
  static const double overhead = [] {
    std::vector<double> v(10001);
    for (double& x : v) {
      const auto t0 = Clock::now();
      const auto t1 = Clock::now();
      x = nsBetween(t0, t1);
    }
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
  }();
  return overhead;
}

double median(std::vector<double>& v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// ---------------------------------------------------------------------------------------
// NCCL's side: descriptors filled as NCCL 2.28 fills them, calls through the table.

void* communicator() {
  static void* context = [] {
    void* ctx = nullptr;
    int mask = 0;
    const cn::Result result = ncclProfiler_v5.init(&ctx, kCommId, &mask, "plugin_bench", 1, 8, 0, nullptr);
    if (result != cn::kSuccess || (mask & cn::kKernelCh) == 0) {
      std::fprintf(stderr, "plugin_bench: init returned %d with mask %#x; COMMTRACE_KERNEL_TIMING=0?\n", result,
                   mask);
      return static_cast<void*>(nullptr);
    }
    return ctx;
  }();
  return context;
}

struct Op {
  void* group = nullptr;
  void* api = nullptr;
  void* coll = nullptr;
};
using Batch = std::array<Op, kBatch>;

// The user thread's events. Descriptors live across calls, as NCCL's on-stack ones would
// be refilled: only the fields that change per op are written in the timed loop.
class UserSide {
 public:
  UserSide() {
    group_.type = cn::kGroupApi;
    group_.u.group_api = cn::GroupApiV5{.graph_captured = false, .group_depth = 1};
    api_.type = cn::kCollApi;
    api_.u.coll_api = cn::CollApiV5{.func = "AllReduce",
                                    .count = 1 << 20,
                                    .datatype = "ncclFloat32",
                                    .root = 0,
                                    .stream = reinterpret_cast<void*>(0x7f3a10000000ull),
                                    .graph_captured = false};
    coll_.type = cn::kColl;
    coll_.rank = 0;
    coll_.u.coll.v4 = cn::CollV4{.seq_number = 0,
                                 .func = "AllReduce",
                                 .send_buff = reinterpret_cast<void*>(0x7f0000000000ull),
                                 .recv_buff = reinterpret_cast<void*>(0x7f0000400000ull),
                                 .count = 1 << 20,
                                 .root = 0,
                                 .datatype = "ncclFloat32",
                                 .n_channels = kChannels,
                                 .n_warps = 16,
                                 .algo = "RING",
                                 .proto = "LL128"};
    coll_.u.coll.parent_group = nullptr;
  }

  void step(Step s, Op& op) {
    void* const ctx = context_;
    switch (s) {
      case kGroupApiStart: ncclProfiler_v5.start_event(ctx, &op.group, &group_); break;
      case kCollApiStart:
        api_.parent_obj = op.group;
        ncclProfiler_v5.start_event(ctx, &op.api, &api_);
        break;
      case kCollStart:
        coll_.parent_obj = op.api;
        ++coll_.u.coll.v4.seq_number;
        ncclProfiler_v5.start_event(ctx, &op.coll, &coll_);
        untracked_ += op.coll == nullptr;
        break;
      case kCollStop: ncclProfiler_v5.stop_event(op.coll); break;
      case kCollApiStop: ncclProfiler_v5.stop_event(op.api); break;
      case kGroupApiStop: ncclProfiler_v5.stop_event(op.group); break;  // NULL: depth 1 is not tracked
      default: break;
    }
    benchmark::DoNotOptimize(op);
  }

  uint64_t untracked() const { return untracked_; }

 private:
  void* const context_ = communicator();
  cn::EventDescrV5 group_{};
  cn::EventDescrV5 api_{};
  cn::EventDescrV5 coll_{};
  uint64_t untracked_ = 0;
};

constexpr Step kUserSteps[] = {kGroupApiStart, kCollApiStart, kCollStart, kCollStop, kCollApiStop, kGroupApiStop};

// The proxy thread's events for one channel of one op.
class ProxySide {
 public:
  ProxySide() { kch_.type = cn::kKernelCh; }

  void* start(void* coll, int channel) {
    kch_.parent_obj = coll;
    kch_.u.kernel_ch.channel_id = static_cast<uint8_t>(channel);
    kch_.u.kernel_ch.p_timer = gpu_clock_ += 1024;
    void* handle = nullptr;
    ncclProfiler_v5.start_event(context_, &handle, &kch_);
    benchmark::DoNotOptimize(handle);
    return handle;
  }
  void state(void* handle) {
    cn::StateArgs args{};
    args.kernel_ch.p_timer = gpu_clock_ += 4096;
    ncclProfiler_v5.record_event_state(handle, cn::kKernelChStop, &args);
  }
  void stop(void* handle) { ncclProfiler_v5.stop_event(handle); }

 private:
  void* const context_ = communicator();
  cn::EventDescrV5 kch_{};
  uint64_t gpu_clock_ = 1'750'000'000'000'000'000ull;
};

// ---------------------------------------------------------------------------------------
// One batch through each side, timed per step or whole.

struct Samples {
  std::array<std::vector<double>, kStepCount> per_call;  // ns per call, one per batch (and channel)
  std::vector<double> per_op;                            // ns per op of this side, one per batch
  double timed_ns = 0;                                   // this side's timed total

  void reserve(size_t batches) {
    for (auto& v : per_call) v.reserve(batches * kChannels);
    per_op.reserve(batches);
  }
};

template <class Body>
double timed(Body&& body) {
  const auto t0 = Clock::now();
  body();
  const auto t1 = Clock::now();
  return std::max(0.0, nsBetween(t0, t1) - timerOverheadNs());
}

// Per step: each step over the whole batch, timed alone. Whole: the steps op after op.
void userBatch(UserSide& user, Batch& ops, bool per_step, Samples* samples) {
  double total = 0;
  if (per_step) {
    for (Step s : kUserSteps) {
      const double ns = timed([&] {
        for (Op& op : ops) user.step(s, op);
      });
      total += ns;
      if (samples != nullptr) samples->per_call[s].push_back(ns / kBatch);
    }
  } else {
    total = timed([&] {
      for (Op& op : ops) {
        for (Step s : kUserSteps) user.step(s, op);
      }
    });
  }
  if (samples != nullptr) {
    samples->per_op.push_back(total / kBatch);
    samples->timed_ns += total;
  }
}

void kernelChOp(ProxySide& proxy, void* coll) {
  for (int c = 0; c < kChannels; ++c) {
    void* h = proxy.start(coll, c);
    proxy.state(h);
    proxy.stop(h);
  }
}

void proxyBatch(ProxySide& proxy, const std::array<void*, kBatch>& colls, bool per_step, Samples* samples) {
  double total = 0;
  if (per_step) {
    std::array<void*, kBatch> kch;
    auto sample = [&](Step s, double ns) {
      total += ns;
      if (samples != nullptr) samples->per_call[s].push_back(ns / kBatch);
    };
    for (int c = 0; c < kChannels; ++c) {
      sample(kKernelChStart, timed([&] {
               for (uint32_t i = 0; i < kBatch; ++i) kch[i] = proxy.start(colls[i], c);
             }));
      sample(kKernelChState, timed([&] {
               for (void* h : kch) proxy.state(h);
             }));
      sample(c + 1 < kChannels ? kKernelChStop : kKernelChLastStop, timed([&] {
               for (void* h : kch) proxy.stop(h);
             }));
    }
  } else {
    total = timed([&] {
      for (void* coll : colls) kernelChOp(proxy, coll);
    });
  }
  if (samples != nullptr) {
    samples->per_op.push_back(total / kBatch);
    samples->timed_ns += total;
  }
}

// The whole sequence op after op on one thread, KernelCh included.
void wholeOpBatch(UserSide& user, ProxySide& proxy, Batch& ops, Samples* samples) {
  const double ns = timed([&] {
    for (Op& op : ops) {
      for (Step s : kUserSteps) user.step(s, op);
      kernelChOp(proxy, op.coll);
    }
  });
  if (samples != nullptr) {
    samples->per_op.push_back(ns / kBatch);
    samples->timed_ns += ns;
  }
}

std::array<void*, kBatch> collHandles(const Batch& ops) {
  std::array<void*, kBatch> colls;
  for (uint32_t i = 0; i < kBatch; ++i) colls[i] = ops[i].coll;
  return colls;
}

uint64_t ringDrops() {
  const ThreadRing* ring = RingRegistry::currentThreadRing();
  return ring == nullptr ? 0 : ring->dropped(RecordKind::kColl);
}

// ---------------------------------------------------------------------------------------
// The Flusher, and keeping the rings from overflowing without timing the wait.

std::string g_run_dir;
std::unique_ptr<Flusher> g_flusher;
std::atomic<uint64_t> g_announced{0};  // records the ops issued so far will write

// The Flusher wakes at half a ring and drains while the batches run. Should it fall
// behind, the user thread waits, untimed, before the ring could fill. records_written
// counts one ClockSample row per drain and chunk (ring_bench.cc), hence "about".
constexpr uint64_t kHighWater = RingRegistry::kDefaultRingRecords / 4 * 3 - kProxyQueueBatches * kBatch;
constexpr uint64_t kLowWater = RingRegistry::kDefaultRingRecords / 4;

uint64_t recordsInRings() {
  const FlusherStats s = g_flusher->stats();
  const uint64_t written = s.records_written - s.chunks_written;
  const uint64_t announced = g_announced.load(std::memory_order_relaxed);
  return announced > written ? announced - written : 0;
}

// Returns false if the Flusher did not catch up within 5 s.
bool waitForFlusher(uint64_t& waits) {
  if (recordsInRings() < kHighWater) return true;
  ++waits;
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (recordsInRings() > kLowWater) {
    if (Clock::now() > deadline) return false;
    RingRegistry::global().doorbell().ring();
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  return true;
}

void startFlusher(const benchmark::State&) {
  communicator();  // its CommInfo record is the first the Flusher writes
  g_announced = 1;
  FlusherOptions options;
  options.dir = g_run_dir;
  g_flusher = std::make_unique<Flusher>(options);
  if (!g_flusher->start()) std::fprintf(stderr, "plugin_bench: a Flusher is already running\n");
}

void stopFlusher(const benchmark::State&) {
  g_flusher->stop();
  const FlusherStats stats = g_flusher->stats();
  if (stats.sinkFailedTotal() != 0) {
    std::fprintf(stderr, "plugin_bench: the flusher failed to write %llu records\n",
                 static_cast<unsigned long long>(stats.sinkFailedTotal()));
  }
  g_flusher.reset();
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(g_run_dir, ec)) {
    std::filesystem::remove(entry.path(), ec);
  }
}

// ---------------------------------------------------------------------------------------
// The proxy thread: takes the user thread's batches from a single-producer queue and
// delivers their KernelCh events, as NCCL's proxy progress thread polls the GPU's counters.

class ProxyThread {
 public:
  explicit ProxyThread(bool per_step) : per_step_(per_step) {
    samples_.reserve(kOpsPerRun / kBatch + 1);
    thread_ = std::thread([this] { run(); });
  }

  // Untimed: spins while the queue is full.
  void push(const Batch& ops, bool sampled) {
    const uint64_t head = head_.load(std::memory_order_relaxed);
    while (head - tail_.load(std::memory_order_acquire) == kProxyQueueBatches) std::this_thread::yield();
    Slot& slot = queue_[head % kProxyQueueBatches];
    slot.colls = collHandles(ops);
    slot.sampled = sampled;
    head_.store(head + 1, std::memory_order_release);
  }

  // Waits for the queue to empty, then stops the thread; its samples are then final.
  Samples& finish() {
    stop_.store(true, std::memory_order_release);
    thread_.join();
    return samples_;
  }
  uint64_t drops() const { return drops_; }

 private:
  struct Slot {
    std::array<void*, kBatch> colls;
    bool sampled;
  };

  void run() {
    ProxySide proxy;
    uint64_t drops_before = 0;
    bool ring_seen = false;
    for (;;) {
      const uint64_t tail = tail_.load(std::memory_order_relaxed);
      if (tail == head_.load(std::memory_order_acquire)) {
        if (stop_.load(std::memory_order_acquire) && tail == head_.load(std::memory_order_acquire)) break;
        std::this_thread::yield();  // NCCL's proxy thread polls too
        continue;
      }
      const Slot& slot = queue_[tail % kProxyQueueBatches];
      proxyBatch(proxy, slot.colls, per_step_, slot.sampled ? &samples_ : nullptr);
      tail_.store(tail + 1, std::memory_order_release);
      if (!ring_seen && RingRegistry::currentThreadRing() != nullptr) {
        ring_seen = true;
        drops_before = ringDrops();
      }
    }
    drops_ = ringDrops() - drops_before;
  }

  const bool per_step_;
  Samples samples_;
  uint64_t drops_ = 0;
  std::array<Slot, kProxyQueueBatches> queue_;
  alignas(64) std::atomic<uint64_t> head_{0};
  alignas(64) std::atomic<uint64_t> tail_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// ---------------------------------------------------------------------------------------

// `kch` holds the KernelCh side's samples; nullptr when the whole sequence ran as one.
void report(benchmark::State& state, Samples& user, Samples* kch, bool per_step, uint64_t drops,
            uint64_t untracked, uint64_t flusher_waits) {
  if (per_step) {
    double op_ns = 0;
    for (int s = 0; s < kStepCount; ++s) {
      const double ns = median(user.per_call[s].empty() ? kch->per_call[s] : user.per_call[s]);
      state.counters[std::string(kStepNames[s]) + "_ns"] = ns;
      op_ns += ns * kCallsPerOp[s];
    }
    state.counters["op_ns"] = op_ns;
  } else {
    state.counters["op_ns"] = median(user.per_op) + (kch != nullptr ? median(kch->per_op) : 0);
  }
  if (kch != nullptr) {
    state.counters["user_op_ns"] = median(user.per_op);
    state.counters["proxy_op_ns"] = median(kch->per_op);
  }
  state.counters["drops"] = static_cast<double>(drops);
  state.counters["untracked"] = static_cast<double>(untracked);
  state.counters["flusher_waits"] = static_cast<double>(flusher_waits);
}

void runOps(benchmark::State& state, bool per_step, bool proxy_thread) {
  if (communicator() == nullptr) {
    state.SkipWithError("plugin init failed or KernelCh disabled");
    return;
  }
  UserSide user;
  ProxySide proxy;  // when the KernelCh events stay on this thread
  std::unique_ptr<ProxyThread> proxy_thread_ptr;
  if (proxy_thread) proxy_thread_ptr = std::make_unique<ProxyThread>(per_step);
  Samples user_samples, kch_samples;
  user_samples.reserve(kOpsPerRun / kBatch + 1);
  kch_samples.reserve(kOpsPerRun / kBatch + 1);
  Batch ops;
  uint64_t flusher_waits = 0;
  bool flusher_ok = true;

  auto oneBatch = [&](bool sampled) {
    if (!waitForFlusher(flusher_waits)) flusher_ok = false;
    g_announced.fetch_add(kBatch, std::memory_order_relaxed);
    Samples* user_out = sampled ? &user_samples : nullptr;
    if (proxy_thread) {
      userBatch(user, ops, per_step, user_out);
      proxy_thread_ptr->push(ops, sampled);
    } else if (per_step) {
      userBatch(user, ops, true, user_out);
      proxyBatch(proxy, collHandles(ops), true, sampled ? &kch_samples : nullptr);
    } else {
      wholeOpBatch(user, proxy, ops, user_out);
    }
  };

  for (uint32_t i = 0; i < kWarmupBatches; ++i) oneBatch(false);
  const uint64_t drops_before = ringDrops();
  const uint64_t untracked_before = user.untracked();
  while (state.KeepRunningBatch(kBatch)) {
    const double before = user_samples.timed_ns + kch_samples.timed_ns;
    oneBatch(true);
    state.SetIterationTime((user_samples.timed_ns + kch_samples.timed_ns - before) * 1e-9);
    if (!flusher_ok) {
      state.SkipWithError("the Flusher did not drain within 5 s");
      break;
    }
  }
  uint64_t drops = ringDrops() - drops_before;
  Samples* kch = per_step ? &kch_samples : nullptr;
  if (proxy_thread) {
    kch = &proxy_thread_ptr->finish();
    drops += proxy_thread_ptr->drops();
  }
  report(state, user_samples, kch, per_step, drops, user.untracked() - untracked_before, flusher_waits);
}

void BM_PerCallback(benchmark::State& state) { runOps(state, true, false); }
void BM_PerCallback_ProxyThread(benchmark::State& state) { runOps(state, true, true); }
void BM_WholeOp(benchmark::State& state) { runOps(state, false, false); }
void BM_WholeOp_ProxyThread(benchmark::State& state) { runOps(state, false, true); }

// The flusher's once-a-second scan for ops in flight (in_flight_report.h) over the whole
// pool, here with no op in flight: its fixed cost, paid on the flusher thread, never NCCL's.
void BM_InFlightScan(benchmark::State& state) {
  uint64_t now = nowNs();
  for (auto _ : state) plugin::reportOpsInFlight(now += plugin::kInFlightReportPeriodNs);
}
BENCHMARK(BM_InFlightScan)->Unit(benchmark::kMicrosecond);

#define CT_PLUGIN_BENCH(fn) \
  BENCHMARK(fn)->Setup(startFlusher)->Teardown(stopFlusher)->UseManualTime()->Iterations(kOpsPerRun)
CT_PLUGIN_BENCH(BM_PerCallback);
CT_PLUGIN_BENCH(BM_PerCallback_ProxyThread);
CT_PLUGIN_BENCH(BM_WholeOp);
CT_PLUGIN_BENCH(BM_WholeOp_ProxyThread);
#undef CT_PLUGIN_BENCH

}  // namespace
}  // namespace commtrace

int main(int argc, char** argv) { return commtrace::bench::mainWithRunDir(argc, argv, commtrace::g_run_dir); }
