// Who kept the others waiting, per rank, host and communicator (analyses/stragglers.h).
// Plain data: times in microseconds, bandwidths in GB/s (1e9 bytes/s, as nccl-tests prints them).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "tools/report/analyses/lateness_heatmap_rows.h"
#include "tools/report/analyses/slow_links_rows.h"

namespace commtrace::report {

// Which reading of a flagged rank's figures decided its class (the writers put it into words:
// evidence_words.h).
enum class StragglerBasis : uint8_t {
  kNone,             // not flagged: no class to decide
  kNoGap,            // no earlier op on its GPU to measure the gap before its late arrivals from
  kSlowLink,         // the gap does not explain the lateness; it ends a slow link
  kEarlierOp,        // the gap does not explain the lateness: an earlier op held it up
  kComputeKernels,   // the longer gap, mostly its compute kernels (compute_share)
  kHostIdleGpu,      // the longer gap, mostly the GPU idle waiting for the host (compute_share)
  kEnqueuedLate,     // the longer gap, the CPU enqueued the op late into it (enqueue_fraction)
  kEnqueuedEarly,    // the longer gap, enqueued early: the GPU was busy (enqueue_fraction)
  kInferred,         // the longer gap, with neither kernel records nor clock samples
};

// How much one rank kept the others waiting.
struct StragglerRow {
  int rank = -1;
  std::string host;
  uint64_t instances = 0;      // collective instances it took part in
  double wait_caused_us = 0;   // sum over instances where it was last: the others' waits
  double late_fraction = 0;    // instances where it was last / instances
  double mean_lateness_us = 0; // mean over instances of (its arrival - first arrival)
  std::string cls;             // "compute", "host", "input", "network", "none" (not a straggler), "unknown"
  double confidence = 0;       // 0..1
  bool flagged = false;        // judged a straggler (not just someone who was last by chance)
  StragglerBasis basis = StragglerBasis::kNone;
  // The evidence's figures, for a program to read: how often chance would have it last, its
  // z-score, the median rank's waiting caused; for a flagged rank, over the ops it arrived
  // last at (gap_ops of them; NaN where not measured): medians of the GPU gap before them, of
  // its peers' gaps, of its excess over them and of its lateness, and the share of the excess
  // its compute kernels account for and how far into the gap the CPU enqueued the op.
  double chance_fraction = 0;
  double z = 0;
  double stretch_z = 0;  // the highest z over stretches of one of its communicators' instances (arrival_windows.h)
  double median_wait_caused_us = 0;
  uint64_t gap_ops = 0;
  uint64_t gap_sampled = 0;  // late arrivals sampled for compute_share and enqueue_fraction
  static constexpr double kNotMeasured = std::numeric_limits<double>::quiet_NaN();
  double gap_us_p50 = kNotMeasured, peer_gap_us_p50 = kNotMeasured, gap_excess_us_p50 = kNotMeasured;
  double late_lateness_us_p50 = kNotMeasured, compute_share = kNotMeasured, enqueue_fraction = kNotMeasured;
  double delay_fraction = kNotMeasured;  // its synchronizations at which it created a delay of 10 us or more
  // What fixing it would save, as a share of the run's time: the run replayed with its created
  // delays set to its peers' typical gap (wait_attribution.h); NaN where it was not replayed.
  double step_saved_share = kNotMeasured;
};

struct HostStragglerRow {
  std::string host;
  std::vector<int> ranks;
  double wait_caused_us = 0;
  double late_fraction = 0;
  // The host as one straggler (stragglers.h, hostIsCulprit): its ranks' last arrivals against
  // chance, its wait against the median host's, and whether the lateness is the host's (spread
  // over most of its ranks) rather than one rank's.
  double z = 0;
  double confidence = 0;
  bool flagged = false;
  double step_saved_share = StragglerRow::kNotMeasured;  // as StragglerRow's, for its ranks together
};

struct CommStragglerRow {
  uint64_t comm = 0;
  std::string comm_name;
  int worst_rank = -1;
  double wait_caused_us = 0;  // by its worst rank
  double total_wait_us = 0;   // all waiting in this communicator
  uint64_t instances = 0;
};

struct StragglerReport {
  std::vector<StragglerRow> ranks;  // sorted by wait_caused_us, descending
  std::vector<HostStragglerRow> hosts;
  std::vector<CommStragglerRow> comms;
  std::vector<SlowLinkRow> links;  // sorted, slowest relative to its kind first
  LatenessHeatmap heatmap;
};

}  // namespace commtrace::report
