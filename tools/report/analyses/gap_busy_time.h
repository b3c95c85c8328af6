// The compute-kernel time inside the GPU gaps the straggler class weighs (straggler_class.h):
// the gap before each sampled late arrival of a flagged rank, and its peers' gaps before the
// same op. The gaps are known once the first pass has read every file; the kernels are read
// in overlap's pass, which follows each process's compute union through its file: each gap
// is a query, asked before that pass and answered as the union's intervals go by, so that
// no process's kernels are held whole.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "tools/report/analyses/interval_union.h"
#include "tools/report/analyses/straggler_class.h"
#include "tools/report/load/run_model.h"

namespace commtrace::report {

class GapBusyTime {
 public:
  // The gaps of the sampled late arrivals of the processes of `ranks` (global ranks), and
  // their peers'.
  GapBusyTime(const RunModel& run, const StragglerEvidence& evidence, const std::vector<int>& ranks);

  // What process p's compute union is shown to (IntervalUnion::Observer), for a pass in which
  // its kernels are placed on its GPU clock. Passes of different processes may run at once.
  IntervalUnion::Observer observer(size_t process);
  // Answers from the run's timelines, for a run held whole with its compute kept.
  void answerFromTimelines(const RunModel& run);

  // The compute-kernel time in [start - gap, start) of process p's GPU clock, a gap asked
  // for; nullopt where its kernels were not followed (no kernel records, or not placed).
  std::optional<double> busyUs(size_t process, uint64_t start, uint64_t gap) const;

 private:
  struct Query {
    uint64_t from = 0, to = 0;
    uint64_t busy_ns = 0;
    bool operator<(const Query& o) const { return from != o.from ? from < o.from : to < o.to; }
  };
  void ask(size_t process, uint64_t start, uint64_t gap);
  void answer(size_t process, const GpuInterval& interval);

  std::vector<std::vector<Query>> queries_;  // per process, sorted and unique
  std::vector<uint64_t> longest_;            // per process, the longest gap asked
  std::vector<uint8_t> followed_;            // per process: its compute union was followed
};

}  // namespace commtrace::report
