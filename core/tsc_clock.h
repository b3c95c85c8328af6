// CLOCK_MONOTONIC from the CPU's time-stamp counter. On a VM the vDSO's clock_gettime
// costs ~25 ns (an ordered TSC read plus its conversion); a plain `rdtsc` costs ~10 ns.
// Every record reads the clock once or twice, so the hot path reads the TSC and converts
// it here, with parameters that one writer (the flusher, on each wake) steers onto
// CLOCK_MONOTONIC the way the kernel slews its own clock: continuously, never jumping,
// converging on the true value by the next steer. Readers never wait: when the parameters
// are being rewritten, are stale (the writer stopped steering) or were never set, toNs()
// answers 0 and the caller reads CLOCK_MONOTONIC itself.
#pragma once

#include <atomic>
#include <cstdint>

namespace commtrace {

class TscClock {
 public:
  struct Reading {
    uint64_t tsc;
    uint64_t mono_ns;
  };

  // The TSC reading as CLOCK_MONOTONIC ns, or 0 when there is no usable calibration.
  uint64_t toNs(uint64_t tsc) const {
    const uint32_t begin = seq_.load(std::memory_order_acquire);
    const uint64_t base_tsc = base_tsc_.load(std::memory_order_relaxed);
    const uint64_t base_ns = base_ns_.load(std::memory_order_relaxed);
    const uint64_t mult = mult_.load(std::memory_order_relaxed);
    const uint64_t valid_ticks = valid_ticks_.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    const uint64_t ticks = tsc - base_tsc;  // a TSC read before the base wraps to huge: invalid
    if ((begin & 1) != 0 || seq_.load(std::memory_order_relaxed) != begin || ticks >= valid_ticks) return 0;
    return base_ns + static_cast<uint64_t>((static_cast<unsigned __int128>(ticks) * mult) >> kShift);
  }

  // One steering step, on the writer's thread: `now` is a (TSC, CLOCK_MONOTONIC) pair
  // taken together, `period_ns` when the next step is expected. The conversion stays valid
  // for a few periods; after that, readers fall back until the next step.
  void steer(Reading now, uint64_t period_ns);

  bool calibrated() const { return valid_ticks_.load(std::memory_order_relaxed) != 0; }

  // The largest error steered away smoothly; a bigger one (first calibration, a suspend)
  // is a jump to the true value.
  static constexpr int64_t kMaxSlewNs = 1'000'000;

 private:
  static constexpr int kShift = 32;  // mult_: ns per tick in 32.32 fixed point
  void publish(uint64_t base_tsc, uint64_t base_ns, uint64_t mult, uint64_t valid_ticks);

  // Readers' view, rewritten under the sequence count (odd while being rewritten).
  alignas(64) std::atomic<uint32_t> seq_{0};
  std::atomic<uint64_t> base_tsc_{0}, base_ns_{0}, mult_{0}, valid_ticks_{0};

  // The writer's own: the reading the tick rate is measured from, and that rate.
  Reading rate_anchor_{};
  uint64_t rate_ = 0;  // ns per tick, 32.32; 0 until measured
};

// Takes a (TSC, CLOCK_MONOTONIC) pair and steers the process's TSC clock, the one nowNs()
// reads, with it. The flusher calls this on every wake. false where the TSC is not used:
// not x86-64, or the kernel does not keep time by it (its clocksource is not "tsc": it
// found the TSC unstable or unsynchronised across CPUs, or a hypervisor hides it), or
// COMMTRACE_TSC=0.
bool steerProcessTscClock(uint64_t period_ns);

}  // namespace commtrace
