// Sustained load with everything at its default (issue #2): P producer threads each record
// FsdpStream collectives at a paced R records/s for S seconds through record(), with the
// default ring size and the default Flusher writing to a temp dir. The default is 2 x 500,000
// records/s for 3 s. Passes (exit 0) only if nothing was dropped and every record reached
// the file.
//
//   sustained_bench [--threads P] [--rate R] [--seconds S] [--tick-us T] [--keep]
//
// Pacing: a producer sleeps until its next record is due (clock_nanosleep, absolute), then
// records every record whose time has come, each stamped with nowNs() as a face would.
// Timer slack makes that bursts of a few dozen records every ~60 us, at the exact average
// rate; --tick-us sleeps at least T us between bursts (fewer wakeups, bigger bursts). Records are pre-generated so that the stream model's cost does not pace anything.
// Printed per producer: how many pushes rang the doorbell (and when the first few did), and
// when the first drop happened, which tells a late doorbell from a flusher too slow.
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "ringbuffer/ringbuffer.h"
#include "sink/flusher.h"
#include "tools/synthetic/fsdp_stream.h"

namespace {

using namespace commtrace;

struct ProducerResult {
  uint64_t pushed = 0;
  uint64_t dropped = 0;
  uint64_t max_lag_ns = 0;  // how far behind schedule the producer ever was
  int64_t first_drop_ns = -1;  // since the producer started; -1 if none
  uint64_t doorbells = 0;      // pushes that found the ring half full and woke the flusher
  std::vector<double> first_bells_ms;
  uint64_t cpu_ns = 0;
  uint32_t ring_capacity = 0;
};

uint64_t cpuNs(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

void produce(int index, uint64_t rate, double seconds, uint64_t tick_ns, ProducerResult& out) {
  synthetic::FsdpStream stream({.rank = 0, .world_size = 8, .layers = 24, .seed = static_cast<uint64_t>(index + 1)});
  std::vector<CollRecord> records(65536);
  for (auto& r : records) r = stream.next();

  const uint64_t total = static_cast<uint64_t>(static_cast<double>(rate) * seconds);
  const double period_ns = 1e9 / static_cast<double>(rate);
  // The thread's first record allocates and touches its ring (2 MiB): before the clock starts.
  uint64_t i = 0;
  if (record(records[i++]) == PushResult::kDropped) {
    out.first_drop_ns = 0;
  } else {
    ++out.pushed;
  }
  const uint64_t cpu0 = cpuNs(CLOCK_THREAD_CPUTIME_ID);
  const uint64_t t0 = nowNs();
  while (i < total) {
    const uint64_t now = nowNs();
    const uint64_t due = std::min(total, static_cast<uint64_t>(static_cast<double>(now - t0) / period_ns) + 1);
    if (due > i + 1) {
      out.max_lag_ns = std::max(out.max_lag_ns, now - t0 - static_cast<uint64_t>(static_cast<double>(i) * period_ns));
    }
    for (; i < due; ++i) {
      // The stream's record, moved in time to now (GPU times with it, as the encoder
      // predicts them from the CPU times).
      CollRecord r = records[i % records.size()];
      const uint64_t shift = nowNs() - r.cpu_start_ns;
      r.cpu_start_ns += shift;
      r.cpu_end_ns += shift;
      r.gpu_start_ns += shift;
      r.gpu_end_ns += shift;
      const PushResult result = record(r);
      if (result == PushResult::kDropped) {
        if (out.first_drop_ns < 0) out.first_drop_ns = static_cast<int64_t>(r.cpu_start_ns - t0);
      } else {
        if (result == PushResult::kStoredHalfFull) {
          ++out.doorbells;
          if (out.first_bells_ms.size() < 4) out.first_bells_ms.push_back(static_cast<double>(r.cpu_start_ns - t0) * 1e-6);
        }
        ++out.pushed;
      }
    }
    const uint64_t next = std::max(t0 + static_cast<uint64_t>(static_cast<double>(i) * period_ns), now + tick_ns);
    const timespec wake{static_cast<time_t>(next / 1'000'000'000u), static_cast<long>(next % 1'000'000'000u)};
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &wake, nullptr);
  }
  out.cpu_ns = cpuNs(CLOCK_THREAD_CPUTIME_ID) - cpu0;
  if (ThreadRing* ring = RingRegistry::currentThreadRing()) {
    out.ring_capacity = ring->capacity();
    out.dropped = 0;
    for (int k = 1; k < kRecordKindCount; ++k) out.dropped += ring->dropped(static_cast<RecordKind>(k));
  }
}

uint64_t processCpuNs() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return (static_cast<uint64_t>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1'000'000u +
          static_cast<uint64_t>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec)) * 1000u;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2;
  uint64_t rate = 500'000;
  double seconds = 3.0;
  uint64_t tick_us = 0;
  bool keep = false;
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    const bool has_value = a + 1 < argc;
    if (arg == "--threads" && has_value) {
      threads = std::atoi(argv[++a]);
    } else if (arg == "--rate" && has_value) {
      rate = std::strtoull(argv[++a], nullptr, 10);
    } else if (arg == "--seconds" && has_value) {
      seconds = std::atof(argv[++a]);
    } else if (arg == "--tick-us" && has_value) {
      tick_us = std::strtoull(argv[++a], nullptr, 10);
    } else if (arg == "--keep") {
      keep = true;
    } else {
      std::fprintf(stderr, "usage: %s [--threads P] [--rate R per thread] [--seconds S] [--tick-us T] [--keep]\n",
                   argv[0]);
      return 2;
    }
  }
  if (threads < 1 || rate == 0 || seconds <= 0) {
    std::fprintf(stderr, "sustained_bench: --threads, --rate and --seconds must be positive\n");
    return 2;
  }

  std::string dir = (std::filesystem::temp_directory_path() / "sustained_bench.XXXXXX").string();
  if (mkdtemp(dir.data()) == nullptr) {
    std::perror("sustained_bench: mkdtemp");
    return 1;
  }
  FlusherOptions options;  // the defaults, but for where the file goes
  options.dir = dir;
  Flusher flusher(options);
  if (!flusher.start()) return 1;

  const uint64_t cpu0 = processCpuNs();
  const uint64_t t0 = nowNs();
  std::vector<ProducerResult> results(static_cast<size_t>(threads));
  std::vector<std::thread> producers;
  for (int t = 0; t < threads; ++t) {
    producers.emplace_back(produce, t, rate, seconds, tick_us * 1000, std::ref(results[static_cast<size_t>(t)]));
  }
  for (auto& p : producers) p.join();
  const uint64_t produce_ns = nowNs() - t0;
  flusher.stop();
  const uint64_t cpu_total = processCpuNs() - cpu0;

  const FlusherStats stats = flusher.stats();
  ProducerResult sum;
  for (const auto& r : results) {
    sum.pushed += r.pushed;
    sum.dropped += r.dropped;
    sum.max_lag_ns = std::max(sum.max_lag_ns, r.max_lag_ns);
    sum.cpu_ns += r.cpu_ns;
  }
  const uint64_t ring_bytes = uint64_t{RingRegistry::kDefaultRingRecords} * sizeof(RecordSlot);
  const double wall_s = static_cast<double>(produce_ns) * 1e-9;

  std::printf("producers             %d x %llu records/s for %.1f s (wall %.3f s)\n", threads,
              static_cast<unsigned long long>(rate), seconds, wall_s);
  std::printf("records pushed        %llu (%.0f records/s in total)\n", static_cast<unsigned long long>(sum.pushed),
              static_cast<double>(sum.pushed) / wall_s);
  std::printf("drops                 %llu\n", static_cast<unsigned long long>(sum.dropped));
  for (size_t t = 0; t < results.size(); ++t) {
    std::printf("  thread %zu: %llu doorbells, the first at", t, static_cast<unsigned long long>(results[t].doorbells));
    for (double ms : results[t].first_bells_ms) std::printf(" %.1f", ms);
    std::printf(" ms\n");
    if (results[t].first_drop_ns >= 0) {
      std::printf("  thread %zu: %llu dropped, the first %.1f ms after it started\n", t,
                  static_cast<unsigned long long>(results[t].dropped), static_cast<double>(results[t].first_drop_ns) * 1e-6);
    }
  }
  std::printf("records written       %llu (incl. clock samples and drop summaries), %llu chunks, %llu bytes\n",
              static_cast<unsigned long long>(stats.records_written),
              static_cast<unsigned long long>(stats.chunks_written),
              static_cast<unsigned long long>(stats.bytes_written));
  std::printf("sink failures         %llu\n", static_cast<unsigned long long>(stats.sinkFailedTotal()));
  std::printf("max producer lag      %.1f us behind schedule\n", static_cast<double>(sum.max_lag_ns) * 1e-3);
  std::printf("ring per thread       %u records x %zu B = %llu bytes (%.1f MiB); this run's rings: %u records\n",
              RingRegistry::kDefaultRingRecords, sizeof(RecordSlot), static_cast<unsigned long long>(ring_bytes),
              static_cast<double>(ring_bytes) / (1 << 20), results[0].ring_capacity);
  std::printf("CPU                   producers %.1f %% of a core each, flusher and rest %.1f %% of a core\n",
              static_cast<double>(sum.cpu_ns) / threads / static_cast<double>(produce_ns) * 100,
              static_cast<double>(cpu_total - std::min(cpu_total, sum.cpu_ns)) / static_cast<double>(produce_ns) * 100);

  const bool ok = sum.dropped == 0 && stats.sinkFailedTotal() == 0 && stats.records_written >= sum.pushed;
  std::printf("%s\n", ok ? "PASS: no drops, every record written" : "FAIL");
  if (keep) {
    std::printf("trace kept: %s\n", flusher.path().c_str());
  } else {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  return ok ? 0 : 1;
}
