// Numbers in the evidence sentences the analyses write.
#pragma once

#include <cmath>
#include <cstdio>
#include <string>

namespace commtrace::report {

inline std::string fixed(double v, int digits) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// A duration in microseconds as "850 us", "3.21 ms", "12.4 s" (or "-50 us": a difference).
inline std::string durationText(double us) {
  const double size = std::fabs(us);
  if (size < 1e3) return fixed(us, size < 10 ? 1 : 0) + " us";
  if (size < 1e6) return fixed(us / 1e3, 2) + " ms";
  return fixed(us / 1e6, 1) + " s";
}

}  // namespace commtrace::report
