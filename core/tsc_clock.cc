#include "core/tsc_clock.h"

#include <algorithm>

namespace commtrace {
namespace {

using u128 = unsigned __int128;

// The rate is measured over at least this long (a reading's own uncertainty, some 50 ns,
// is then under 1 ppm of it), and re-measured from a fresh anchor after kRateSpanNs so
// that it follows the kernel's NTP frequency corrections.
constexpr uint64_t kMinRateSpanNs = 50'000'000, kRateSpanNs = 4'000'000'000;
// An error is slewed away over at least this long: the rate changes by at most 1 %.
constexpr uint64_t kMinSlewSpanNs = 100'000'000;
// The conversion is trusted this long (or 4 periods) after a steer.
constexpr uint64_t kMinValidNs = 1'000'000'000;

}  // namespace

void TscClock::steer(Reading now, uint64_t period_ns) {
  if (rate_anchor_.tsc == 0 || now.tsc <= rate_anchor_.tsc || now.mono_ns <= rate_anchor_.mono_ns) {
    rate_anchor_ = now;  // the first reading, or one that makes no sense after the anchor
    return;
  }
  const uint64_t span_ns = now.mono_ns - rate_anchor_.mono_ns, span_ticks = now.tsc - rate_anchor_.tsc;
  if (span_ns >= kMinRateSpanNs) rate_ = static_cast<uint64_t>((u128{span_ns} << kShift) / span_ticks);
  if (span_ns >= kRateSpanNs) rate_anchor_ = now;
  if (rate_ == 0) return;

  // Where the published conversion puts this instant, and how far that is from the truth.
  const uint64_t predicted = toNs(now.tsc);
  const int64_t error = static_cast<int64_t>(predicted - now.mono_ns);
  const uint64_t slew_ns = std::max(period_ns, kMinSlewSpanNs);
  const uint64_t valid_ns = std::max(4 * period_ns, kMinValidNs);
  const auto ticksFor = [&](uint64_t ns) { return static_cast<uint64_t>((u128{ns} << kShift) / rate_); };
  if (predicted == 0 || error > kMaxSlewNs || error < -kMaxSlewNs) {
    publish(now.tsc, now.mono_ns, rate_, ticksFor(valid_ns));
    return;
  }
  // Continuous at this instant, and on the true clock again `slew_ns` from now: the slope
  // is the measured rate, scaled by (slew - error) / slew.
  const auto mult = static_cast<uint64_t>(u128{rate_} * static_cast<uint64_t>(static_cast<int64_t>(slew_ns) - error) / slew_ns);
  publish(now.tsc, predicted, mult, ticksFor(valid_ns));
}

void TscClock::publish(uint64_t base_tsc, uint64_t base_ns, uint64_t mult, uint64_t valid_ticks) {
  const uint32_t seq = seq_.load(std::memory_order_relaxed);
  seq_.store(seq + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  base_tsc_.store(base_tsc, std::memory_order_relaxed);
  base_ns_.store(base_ns, std::memory_order_relaxed);
  mult_.store(mult, std::memory_order_relaxed);
  valid_ticks_.store(valid_ticks, std::memory_order_relaxed);
  seq_.store(seq + 2, std::memory_order_release);
}

}  // namespace commtrace
