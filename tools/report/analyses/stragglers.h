// Stragglers: per rank, host and communicator, how long the others waited for it at
// synchronizing collectives (lateness.h, no clocks compared), which ranks are stragglers
// rather than last by chance, why (straggler_class.h), slow links (slow_links.h) and
// lateness over time (lateness_heatmap.h).
#pragma once

#include "tools/report/analyses/arrival_windows.h"
#include "tools/report/analyses/coll_shapes.h"
#include "tools/report/analyses/gap_busy_time.h"
#include "tools/report/analyses/lateness.h"
#include "tools/report/analyses/lateness_heatmap.h"
#include "tools/report/analyses/transfer_cells.h"
#include "tools/report/analyses/straggler_class.h"
#include "tools/report/load/op_stream.h"
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
// A host is flagged by the same two thresholds, over its ranks' arrivals together, when the
// lateness is spread over it: at least half its ranks last more often than chance, and no
// rank holding more than kMaxRankShareOfHost of the host's last arrivals.
constexpr double kMaxRankShareOfHost = 0.6;

// How far above chance, in standard deviations, a count of last arrivals is: `last` against
// chance's mean and variance of it (0 without variance). The report and the live alerts judge
// by it.
double lastArrivalZ(double last, double expected_last, double var_last);
// A judgement's confidence from its strength, the smaller of its ratios to its thresholds:
// 0.5 at the thresholds, 1 at three times them.
double confidenceOf(double strength);

// Confidence: how sure the rank is a straggler (0.5 at the weaker of the two thresholds, 1 at
// three times it), weighted half by how directly its class is shown (straggler_class.h's
// certainty): x (0.5 + 0.5 x certainty). Ranks not flagged keep the first part.
//
// The arrivals are summed as the instances stream by (ArrivalTally), per communicator seat:
// a seat's global rank is settled only at the stream's end.
class ArrivalTally : public JoinedOpSink {
 public:
  void collective(const CollInstance& instance, std::span<const MemberView> members) override;
  void transfer(const P2pTransfer&) override {}
  void finish(std::span<const uint32_t> new_index) override;
  // Adds another tally of the same run (finished, or both not yet): a shard's.
  void merge(const ArrivalTally& other);

  struct Seat {
    uint64_t instances = 0;
    double last = 0;           // instances it arrived last at (shared among ties)
    double expected_last = 0;  // ... if the last arriver were drawn at random
    double var_last = 0;
    double wait_caused_ns = 0;
    double lateness_ns = 0;
    void merge(const Seat& other);
  };
  struct Comm {
    uint64_t instances = 0;
    double total_wait_ns = 0;
    std::vector<Seat> seats;  // per comm rank
    ArrivalWindows windows;   // the same per seat, in stretches of the instances
    void merge(const Comm& other);
  };
  // Per communicator index (none for those without a timed synchronizing instance).
  const std::vector<Comm>& comms() const { return comms_; }

 private:
  InstanceArrivals arrivals_;  // reused from instance to instance
  std::vector<Comm> comms_;
};

// What the stream gathered for the straggler tables: the arrivals, the collectives by shape
// for the slow links (slow_links.h), the lateness for the heatmap (lateness_heatmap.h) and
// the gaps that tell why a straggler was late (straggler_class.h).
// busy: the compute time in the flagged ranks' gaps (gap_busy_time.h), asked for
// flaggedStragglers(); nullptr: measured from the run's timelines (a run held whole).
struct StragglerInputs {
  const ArrivalTally& arrivals;
  const CollShapeTally& shapes;
  const TransferCellTally& transfers;
  const LatenessBins& lateness;
  const StragglerEvidence& evidence;
  const GapBusyTime* busy = nullptr;
};
// The global ranks rankStragglers flags, before their class is known: what GapBusyTime asks about.
std::vector<int> flaggedStragglers(const RunModel& run, const ArrivalTally& arrivals);
StragglerReport rankStragglers(const RunModel& run, const ClockAlignment& clocks, const StragglerInputs& in);
// The same over a run held whole (replayed).
StragglerReport rankStragglers(const RunModel& run, const ClockAlignment& clocks);
// Whether a rank is on a flagged host: the host is the culprit, named instead of its ranks.
bool onFlaggedHost(const StragglerReport& report, int rank);

}  // namespace commtrace::report
