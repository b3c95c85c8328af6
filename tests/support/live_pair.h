// A live stream for the tests of LiveStragglers and what reads it: a two-member
// communicator's AllReduce, one every 50 ms, rank 1 arriving late_ns(step) after rank 0.
#pragma once

#include <cstdint>
#include <vector>

#include "tools/report/analyses/live_stragglers.h"
#include "tools/report/load/run_model.h"

namespace commtrace::testutil {

inline constexpr uint64_t kPairT0 = 1'790'000'000'000'000'000ull;  // some UTC time
inline constexpr uint64_t kPairStepNs = 50'000'000;

// Feeds `steps` steps from kPairT0 (both kernels end 5.3 ms into the step), advancing the
// watermark to each step as it is fed. Each op's GPU gap is measured from its previous one's
// end, as the loader measures it: rank 1's is late_ns longer. `live`: a LiveStragglers, or
// anything with its collective() and advance(watermark).
template <class Live, class Late>
void feedLatePair(report::RunModel& run, uint32_t comm, Live& live, uint64_t steps, Late late_ns) {
  report::CollInstance c;
  c.comm = comm;
  c.func = run.names.intern("AllReduce");
  c.n_members = 2;
  c.bytes = 1 << 20;
  std::vector<report::MemberView> members(2);
  for (uint64_t step = 0; step < steps; ++step) {
    const uint64_t t = kPairT0 + step * kPairStepNs;
    for (int r = 0; r < 2; ++r) {
      const uint64_t at = t + (r == 1 ? late_ns(step) : 0);
      const uint64_t gap = step == 0 ? report::MemberView::kNoGap : at - (t - kPairStepNs + 5'300'000);
      members[static_cast<size_t>(r)] = {
          .process = r, .comm_rank = r, .cpu_start_ns = at, .gpu_start_ns = at, .gpu_end_ns = t + 5'300'000, .gpu_gap_ns = gap};
    }
    c.seq = c.op_index = step;
    live.collective(c, members);
    live.advance(t);
  }
}

}  // namespace commtrace::testutil
