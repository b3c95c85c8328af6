// One process's compute kernels, merged into disjoint intervals on its GPU clock as they are
// read from its file, held only while a reader still needs them: overlap's sweep and the
// straggler class's busy-time queries follow it through the run, and neither needs the
// process's kernels held whole.
//
// Kernels come from CUPTI's buffers in roughly start order (stream by stream, buffer by
// buffer); kReorderKernels of them are held to restore it. Once a kernel has come out in
// start order, no later one starts before it, so the union is final before its start.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "tools/report/load/reorder_buffer.h"
#include "tools/report/load/step_pattern.h"
#include "tools/report/run_model.h"

namespace commtrace::report {

class ComputeUnion {
 public:
  static constexpr size_t kReorderKernels = kProgramReorderOps;

  // Called with each union interval as it closes (is final), in start order.
  using Observer = std::function<void(const GpuInterval&)>;
  explicit ComputeUnion(Observer on_closed = {});

  void add(const GpuInterval& kernel);  // in file order; empty intervals are ignored
  void endOfInput();                    // every kernel is in: the whole union is final
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
  // Kernels that came too far out of start order to be merged whole (their part before the
  // union's last interval was lost).
  uint64_t outOfOrder() const { return out_of_order_; }

 private:
  void merge(GpuInterval kernel);

  void close();

  Observer on_closed_;
  ReorderBuffer<GpuInterval, bool (*)(const GpuInterval&, const GpuInterval&)> start_order_;
  bool have_open_ = false;
  GpuInterval open_{};
  uint64_t final_before_ = 0;
  std::vector<GpuInterval> closed_;  // [begin_, end) still held
  size_t begin_ = 0;
  uint64_t dropped_ = 0;
  uint64_t out_of_order_ = 0;
};

}  // namespace commtrace::report
