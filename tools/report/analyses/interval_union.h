// The union of one process's GPU intervals (its communication kernels, or its compute
// kernels), merged into disjoint intervals on its GPU clock as they are read from its file
// and held only while a reader still needs them: overlap's sweep and the straggler class's
// busy-time queries follow it through the run, and neither needs the intervals held whole.
//
// Intervals come in roughly start order (ops as they complete, thread by thread; CUPTI's
// kernels stream by stream, buffer by buffer); kReorder of them are held to restore it. Once
// one has come out in start order, no later one starts before it, so the union is final
// before its start.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "tools/report/load/reorder_buffer.h"
#include "tools/report/load/step_pattern.h"
#include "tools/report/load/run_model.h"

namespace commtrace::report {

class IntervalUnion {
 public:
  static constexpr size_t kReorder = kProgramReorderOps;

  // Called with each union interval as it closes (is final), in start order.
  using Observer = std::function<void(const GpuInterval&)>;
  explicit IntervalUnion(Observer on_closed = {});

  void add(const GpuInterval& interval);  // in file order; empty intervals are ignored
  void endOfInput();                      // every interval is in: the whole union is final
  bool ended() const { return final_before_ == UINT64_MAX; }

  // The union is final for times before this (UINT64_MAX after endOfInput).
  uint64_t finalBefore() const { return final_before_; }
  // Every time before this lies before the union's growing last interval: the closed
  // intervals hold all of the union there.
  uint64_t closedBefore() const { return have_open_ ? open_.start_ns : final_before_; }
  // Closed intervals so far (the union's, in start order), counted from the first; those
  // from the index-th on, which must not have been dropped.
  uint64_t closedCount() const { return dropped_ + closed_.size(); }
  std::span<const GpuInterval> closedFrom(uint64_t index) const;
  std::span<const GpuInterval> closed() const { return closedFrom(dropped_ + begin_); }
  // The final union's intervals that reach into [from, to) (to <= finalBefore()), into out.
  void within(uint64_t from, uint64_t to, std::vector<GpuInterval>& out) const;
  // Closed intervals ending at or before t are needed no more.
  void dropEndingBy(uint64_t t);

  // The start of the first interval merged and the latest end of any (0: none yet).
  uint64_t firstStart() const { return first_start_; }
  uint64_t lastEnd() const { return last_end_; }
  // Intervals that came more than kReorder out of start order; each lost its part before
  // the union's growing last interval (what came before that may be summed already).
  uint64_t outOfOrder() const { return out_of_order_; }

 private:
  void merge(GpuInterval interval);
  void close();

  Observer on_closed_;
  ReorderBuffer<GpuInterval, bool (*)(const GpuInterval&, const GpuInterval&)> start_order_;
  bool have_open_ = false;
  GpuInterval open_{};
  uint64_t final_before_ = 0;
  uint64_t first_start_ = 0, last_end_ = 0;
  std::vector<GpuInterval> closed_;  // [begin_, end) still held
  size_t begin_ = 0;
  uint64_t dropped_ = 0;
  uint64_t out_of_order_ = 0;
};

}  // namespace commtrace::report
