// MemberView::gpu_gap_ns as a process's file is read, in memory that does not grow with it.
// The gap needs the ops that started before an op, and a file holds its ops in the order
// they finished: an op still running on another stream is written after the ops it outlasts.
// So each chunk's ops are placed among the chunk itself and the last kWindow ops before it,
// sorted by start; what fell out of the window is kept as one latest end.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tools/report/run_model.h"

namespace commtrace::report {

class GpuGapTracker {
 public:
  // Earlier ops kept beside a chunk's own. An op written more than a chunk plus this many
  // ops after one that started later is not seen by that one's gap.
  static constexpr size_t kWindow = 512;

  // Sets gpu_gap_ns of a chunk's ops, given in file order.
  void fill(std::span<MemberView* const> chunk_ops);

 private:
  struct Span {
    uint64_t start = 0;
    uint64_t end = 0;
    MemberView* op = nullptr;  // of the chunk being filled; nullptr for the window's
  };
  std::vector<Span> window_;     // the last kWindow earlier ops by start, sorted by start
  std::vector<Span> sorted_;     // scratch: window and chunk
  uint64_t evicted_end_ = 0;     // the latest end of the ops that left the window
  bool any_before_ = false;      // some op with GPU times came before the window's
};

}  // namespace commtrace::report
