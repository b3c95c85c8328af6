// Stragglers: per rank, host and communicator, how long the others waited for it at
// synchronizing collectives (lateness.h, no clocks compared), which ranks are stragglers
// rather than last by chance, why (straggler_class.h), slow links (slow_links.h) and
// lateness over time (lateness_heatmap.h).
#pragma once

#include "tools/report/load/clock_align.h"
#include "tools/report/report.h"
#include "tools/report/run_model.h"

namespace commtrace::report {

// A rank is flagged when both hold:
// - it arrived last far more often than chance: with k timed members an instance's last
//   arriver is each with chance 1/k, and its count of last arrivals is at least kMinZ
//   standard deviations above that expectation (jitter alone: about 3 in 100,000);
// - it imposed far more wait: at least kMinWaitRatio times the median rank's wait caused.
constexpr double kMinZ = 4.0;
constexpr double kMinWaitRatio = 3.0;

// Confidence: how sure the rank is a straggler (0.5 at the weaker of the two thresholds, 1 at
// three times it), weighted half by how directly its class is shown (straggler_class.h's
// certainty): x (0.5 + 0.5 x certainty). Ranks not flagged keep the first part.
StragglerReport rankStragglers(const RunModel& run, const ClockAlignment& clocks);

}  // namespace commtrace::report
