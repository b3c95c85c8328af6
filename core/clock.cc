#include "core/clock.h"

#include <time.h>

#include <atomic>
#include <cstdio>
#include <cstring>

#include "core/settings.h"
#include "core/tsc_clock.h"

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace commtrace {
namespace {

uint64_t read(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

constinit TscClock g_tsc_clock;

#if defined(__x86_64__)
// The kernel keeps CLOCK_MONOTONIC by the TSC only when it found the TSC invariant and in
// step across CPUs; that is the condition for reading it on any CPU.
bool kernelKeepsTimeByTsc() {
  FILE* f = std::fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");
  if (f == nullptr) return false;
  char name[32] = {};
  const bool tsc = std::fgets(name, sizeof name, f) != nullptr && std::strcmp(name, "tsc\n") == 0;
  std::fclose(f);
  return tsc;
}

// A TSC reading and CLOCK_MONOTONIC at the same instant: the middle of the narrowest of
// several pairs of clock reads around an ordered TSC read. The reading's error is half its
// width, and the rate is measured between two readings a few periods apart, so one
// preempted pair would skew the conversion by microseconds (seen on a loaded CI machine);
// the narrowest of eight is some 50 ns wide even under load.
bool takeReading(TscClock::Reading& out) {
  constexpr int kAttempts = 8;
  constexpr uint64_t kWidestUsableNs = 5'000;
  uint64_t best_width = kWidestUsableNs;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    const uint64_t before = read(CLOCK_MONOTONIC);
    _mm_lfence();
    const uint64_t tsc = __rdtsc();
    _mm_lfence();
    const uint64_t after = read(CLOCK_MONOTONIC);
    if (after - before < best_width) {
      best_width = after - before;
      out = {tsc, before + (after - before) / 2};
    }
  }
  return best_width < kWidestUsableNs;
}
#endif

}  // namespace

uint64_t nowNs() {
#if defined(__x86_64__)
  if (g_tsc_clock.calibrated()) {
    if (const uint64_t ns = g_tsc_clock.toNs(__rdtsc()); ns != 0) return ns;
  }
#endif
  return read(CLOCK_MONOTONIC);
}

uint64_t realtimeNs() { return read(CLOCK_REALTIME); }

bool steerProcessTscClock(uint64_t period_ns) {
#if defined(__x86_64__)
  static const bool usable = settings().tsc && kernelKeepsTimeByTsc();
  // One steerer at a time (the flusher; a test's thread besides it would be a second).
  static constinit std::atomic<bool> steering{false};
  if (!usable || steering.exchange(true, std::memory_order_acquire)) return usable;
  if (TscClock::Reading now{}; takeReading(now)) g_tsc_clock.steer(now, period_ns);
  steering.store(false, std::memory_order_release);
  return true;
#else
  (void)period_ns;
  return false;
#endif
}

}  // namespace commtrace
