#include "core/clock.h"

#include <time.h>

namespace commtrace {
namespace {

uint64_t read(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

uint64_t nowNs() { return read(CLOCK_MONOTONIC); }

uint64_t realtimeNs() { return read(CLOCK_REALTIME); }

}  // namespace commtrace
