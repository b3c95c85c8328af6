// The findings' fields (analyses/findings.h).
// Plain data: times in microseconds, bandwidths in GB/s (1e9 bytes/s, as nccl-tests prints them).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace commtrace::report {

// One finding with the fields a CI job or a dashboard acts on (SCHEMA.md, finding_details[]).
struct FindingRow {
  static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
  std::string finding;     // the sentence Report::findings has
  std::string kind;        // "straggler", "slow_host", "slow_link", "missing_ranks", ...
  std::string severity;    // "window", "loss", "culprit", "cost", "note": the order they come in
  std::string level;       // "run", "rank", "host", "link", "communicator"
  std::string subject;     // "rank 3", "host node1", "rank 7 <-> rank 8", a communicator; "" for the run
  std::vector<int> ranks;  // the global ranks concerned
  double from_us = kNone;  // when: on the aligned timeline, from the run's first column
  double to_us = kNone;
  double cost_us = kNone;  // what it cost: the waiting it caused, the exposed or blocked time
  double cost_per_step_us = kNone;  // the same per step (the job's steps as overlap counts them)
  double cost_share = kNone;        // the same over the time it was taken from (0..1)
  // For a culprit: what fixing it would save per step, estimated by replaying the run without
  // its delays, and as a share of the step.
  double step_saved_us = kNone;
  double step_saved_share = kNone;
  double confidence = kNone;
};

}  // namespace commtrace::report
