// MemberView::gpu_gap_ns as a process's file is read, in memory that does not grow with it.
// The gap needs the ops that started before an op; a file holds its ops in about the order
// they finished. So each chunk's ops are placed among the chunk itself and the last kWindow
// ops read before it (those that finished earlier but may have started later, on another
// stream), sorted by start; what fell out of the window is kept as one latest end. An op
// that started earlier and outlasted this one is written after it: seen when in the same
// chunk, missed when written in a later one, which leaves the gap as measured to the ops
// before instead of 0. Exact for ops that do not overlap (one stream) and within a chunk. An
// op written after more than the window of ops that started later has no gap (kNoGap).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tools/report/load/run_model.h"

namespace commtrace::report {

// An op's GPU interval and where its gap is written (nullptr: an op that only precedes).
struct GapSpan {
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t* gap = nullptr;
};

// Sorts spans by start and sets each *gap to its start's distance from the latest end of the
// spans that started strictly earlier (0 while one still ran), counting ops before all of
// them that ended at latest_end_before when any_before; kNoGap stays where none started earlier.
void setGapsInStartOrder(std::vector<GapSpan>& spans, uint64_t latest_end_before, bool any_before);

class GpuGapTracker {
 public:
  // Earlier ops kept beside a chunk's own, at least (by default). An op written more than a
  // chunk plus this many ops after one that started later is not seen by that one's gap.
  static constexpr size_t kWindow = 512;
  static constexpr size_t kFewestWindow = 32;  // in a wide run (width_budget.h)
  explicit GpuGapTracker(size_t window = kWindow) : window_size_(window) {}

  // Sets gpu_gap_ns of a chunk's ops, given in file order.
  void fill(std::span<MemberView* const> chunk_ops);

 private:
  size_t window_size_;
  // The last window_size_ to 1.25 * window_size_ earlier ops, sorted by start. (A run's files are
  // all open at once: what a tracker keeps between chunks is all there is of it 1,024 times over.)
  std::vector<GapSpan> window_;
  std::vector<uint64_t> through_end_;  // per window_ op: the latest end of it and all before it
  void forgetGapsBeforeTheEvicted();
  uint64_t evicted_end_ = 0;     // the latest end of the ops that left the window
  uint64_t evicted_start_ = 0;   // the latest start of those
  bool any_before_ = false;      // some op with GPU times came before the window's
};

}  // namespace commtrace::report
