// The part of an op's GPU interval its NVTX path has not counted yet. The pieces of one
// AlltoAll, Gather or Scatter (a send and a receive per peer, run by one kernel) each carry
// that kernel's interval, and ops of a path may run at once on several streams: a path
// counts such time once, not once per piece. Ops come close to program order, so the
// path's latest counted stretch is all that is remembered; an op entirely before it counts
// whole.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

namespace commtrace::report {

class PathSpan {
 public:
  struct Part {
    uint64_t start_ns = 0;
    uint64_t end_ns = 0;
    uint64_t length() const { return end_ns - start_ns; }
  };

  // The at most two parts of [start_ns, end_ns) outside the stretch counted so far (empty
  // parts have start_ns == end_ns), which then covers them too.
  std::array<Part, 2> take(uint64_t start_ns, uint64_t end_ns) {
    if (end_ns <= start_ns) return {};
    if (end_ns <= counted_.start_ns || start_ns >= counted_.end_ns) {  // apart: a new stretch
      counted_ = {start_ns, end_ns};
      return {Part{start_ns, end_ns}, Part{}};
    }
    const Part before{start_ns, std::max(start_ns, std::min(end_ns, counted_.start_ns))};
    const Part after{std::min(end_ns, std::max(start_ns, counted_.end_ns)), end_ns};
    counted_ = {std::min(start_ns, counted_.start_ns), std::max(end_ns, counted_.end_ns)};
    return {before, after};
  }

  // The length take() would count, and counts it.
  uint64_t takeLength(uint64_t start_ns, uint64_t end_ns) {
    const auto parts = take(start_ns, end_ns);
    return parts[0].length() + parts[1].length();
  }

 private:
  Part counted_;
};

}  // namespace commtrace::report
