// Stragglers: per rank, host and communicator, how long the others waited for it at
// synchronizing collectives (lateness.h, no clocks compared), which ranks are stragglers
// rather than last by chance, why (straggler_class.h), slow links (slow_links.h) and
// lateness over time (lateness_heatmap.h).
#pragma once

#include "tools/report/analyses/arrival_windows.h"
#include "tools/report/analyses/call_paths_rows.h"
#include "tools/report/analyses/coll_shapes.h"
#include "tools/report/analyses/gap_busy_time.h"
#include "tools/report/analyses/lateness.h"
#include "tools/report/analyses/lateness_heatmap.h"
#include "tools/report/analyses/straggler_class.h"
#include "tools/report/analyses/stragglers_rows.h"
#include "tools/report/analyses/transfer_cells.h"
#include "tools/report/analyses/wait_attribution.h"
#include "tools/report/load/archived_name.h"
#include "tools/report/load/clock_align.h"
#include "tools/report/load/path_span.h"
#include "tools/report/load/op_stream.h"
#include "tools/report/load/run_model.h"

namespace commtrace::report {

// A rank is flagged as a root culprit (wait_attribution.h) when both hold:
// - its own delays are systematic: its GPU gap before its ops exceeds its peers' typical gap
//   (the other members' before the same collective, the same stage's of other pipeline copies
//   before a send or receive) by a mean at least kMinZ standard errors above zero (gapExcessZ);
// - the waiting its delays caused (here and passed along) is at least kMinWaitRatio times the
//   typical rank's of the other hosts (their median, at least kTypicalFloor of the mean rank's).
// Or, for delays now and then (an input stall every N steps): it caused kStrongWaitRatio
// times the typical waiting and kMinWaitRatio times its own host's other ranks' median (a
// healthy pipeline's first stage, whose every delay the stages after it inherit, reached 21x
// the later stages' on jitter, and so did its other ranks), created the delay at
// kMinCreated instances at least, and its gap excess is at least half as systematic (kMinZ /
// 2: not the jitter of a rank whose every delay the whole pipeline after it inherits).
// Either way, a rank whose delays caused under kMinShareOfWorst of the waiting the worst
// flagged rank's caused is not flagged: beside a culprit, the few microseconds a neighbour's
// gap grows by (a pipeline stage that receives its gradients late) are that culprit's wake.
constexpr double kMinZ = 4.0;
constexpr double kMinShareOfWorst = 0.1;
constexpr double kMinWaitRatio = 3.0;
constexpr double kStrongWaitRatio = 20.0;
constexpr double kMinCreated = 3.0;
constexpr double kTypicalFloor = 0.1;
// A host is flagged when its ranks create delays together: per rank it caused kMinWaitRatio
// times the typical rank's waiting of the other hosts, more than half its ranks caused
// kMinHostRankRatio times it each, no rank caused more than kMaxRankShareOfHost of it, and its
// ranks' gap excess together is systematic (kMinZ).
constexpr double kMinHostRankRatio = 2.0;
constexpr double kMaxRankShareOfHost = 0.6;

// How far above chance, in standard deviations, a count of last arrivals is: `last` against
// chance's mean and variance of it (0 without variance). The report and the live alerts judge
// by it.
double lastArrivalZ(double last, double expected_last, double var_last);
// A judgement's confidence from its strength, the smaller of its ratios to its thresholds:
// 0.5 at the thresholds, 1 at three times them.
// Strength 1 is a flag's threshold (confidence 0.5); an unflagged judgement is held below it.
double confidenceOf(double strength);
constexpr double kUnflaggedStrength = 0.98;

// Confidence: how sure the rank is a straggler (0.5 at the weaker of the two thresholds, 1 at
// three times it), weighted half by how directly its class is shown (straggler_class.h's
// certainty): x (0.5 + 0.5 x certainty). Ranks not flagged keep the first part.
//
// The tally counts root causes, not last arrivals (wait_attribution.h): per communicator seat,
// the share of each synchronization's lateness the seat created (Seat::last) against chance,
// and the waiting its created delays caused there and, passed along, in later ops
// (wait_caused_ns). A seat's global rank is settled only at the stream's end. Collectives and
// plain sends/receives are synchronizations; other ops only pass each member's blame on.
class ArrivalTally : public JoinedOpSink {
 public:
  // Synchronizations between looks for candidates: at 32, 64 and 128 (a short run has few),
  // then every kPickEvery, and once that is under 1/kPickShare of the synchronizations so far,
  // every 1/kPickShare of them: a culprit is still picked within a sixteenth of the run, and a
  // run of a million synchronizations is looked at ~100 times, not 4,000 (each look sorts
  // every process's cost).
  static constexpr uint64_t kFirstPick = 32;
  static constexpr uint64_t kPickEvery = 256;
  static constexpr uint64_t kPickShare = 16;
  static constexpr size_t kCandidatesPicked = 3;   // the costliest origins looked at each time
  static constexpr double kCandidateRatio = 2.0;   // ... at this many times the median process's cost
  ArrivalTally();
  ArrivalTally(const ArrivalTally&) = delete;
  ArrivalTally& operator=(const ArrivalTally&) = delete;

  void collective(const CollInstance& instance, std::span<const MemberView> members) override;
  void transfer(const P2pTransfer& transfer) override;
  void runWidth(size_t processes) override {
    evidence_.runWidth(processes);
    attribution_.runWidth(processes);
  }
  void finish() override;
  // Adds another tally of the same run (finished, or both not yet): a shard's. Waits pass
  // back only along the ops one shard saw: shard by time, not by communicator.
  void merge(const ArrivalTally& other);

  struct Seat {
    uint64_t instances = 0;
    double last = 0;           // the share of the instances' lateness it created (last arrivals whose gap explains them)
    double expected_last = 0;  // ... if the last arriver were drawn at random
    double var_last = 0;
    double wait_caused_ns = 0;  // the others' waiting its created delays caused, here and passed along
    double lateness_ns = 0;
    // Its GPU gap before each op over its peers' typical gap (us), where both were measured:
    // whether its delays are systematic (gapExcessZ), last or not.
    RoleGaps::Sums excess;
    void merge(const Seat& other);
    template <class Archive>
    void serialize(Archive& ar) {
      ar(instances, last, expected_last, var_last, wait_caused_ns, lateness_ns, excess);
    }
  };
  struct Comm {
    uint64_t instances = 0;
    double total_wait_ns = 0;
    std::vector<Seat> seats;  // per comm rank
    ArrivalWindows windows;   // the same per seat, in stretches of the instances
    void merge(const Comm& other);
    template <class Archive>
    void serialize(Archive& ar) {
      ar(instances, total_wait_ns, seats, windows);
    }
  };
  // Per communicator index (none for those without a timed synchronizing instance).
  const std::vector<Comm>& comms() const { return comms_; }
  // The run being read, whose processes' hosts make a slow host a candidate to replay
  // (without it, only ranks are).
  void knowHosts(const RunModel& run) {
    run_ = &run;
    attribution_.knowHosts(run);
  }
  // Becomes a copy of a tally still being fed, with what it still waits to attribute (a
  // snapshot of a live run: finish() then attributes that too).
  void snapshotFrom(const ArrivalTally& live);
  // What fixing the costliest origins would save (candidates chosen as the stream goes).
  std::vector<ImpactEstimate> impacts() const;
  // Every process's gaps before its sends and receives, by role (RoleGaps): their excess over
  // their peers' counts in a rank's gap excess, whatever order the transfers came in.
  RoleGaps::ProcessSums roleSums() const;
  // Why each process was late where it created a delay (straggler_class.h).
  const StragglerEvidence& evidence() const { return evidence_; }
  // Each NVTX path's waiting (CollInstance::path; 0: none recorded): its ops' members'
  // own waits in them, and the waiting caused by delays created before its ops, here and
  // passed along (a seat's wait_caused_ns by the path of the op it was late for).
  const std::unordered_map<NameId, PathWaiting>& waitingByPath() const { return waiting_by_path_; }
  // A finished tally as a shard's state (tools/report/shard/): what it attributed, with its
  // impacts and role sums as merge() takes them; the walk itself is not kept. Read back into
  // a tally that has taken no op.
  template <class Archive>
  void serialize(Archive& ar) {
    ar(comms_, evidence_);
    archiveEntries(ar, waiting_by_path_, [](Archive& a, NameId& path, PathWaiting& w) { a(archived(path), w.waited_ns, w.wait_caused_ns); });
    if constexpr (Archive::is_loading::value) {
      ar(merged_impacts_, merged_role_sums_);
    } else {
      ar(impacts(), roleSums());
    }
  }

 private:
  void tally(const Attributed& a);
  void noteWaited(const SyncMember& m, NameId path);
  Comm& commAt(uint32_t comm);
  void pickCandidates();
  void pickHostCandidate(double typical);

  WaitAttribution attribution_;
  StragglerEvidence evidence_;
  const RunModel* run_ = nullptr;
  std::vector<Comm> comms_;
  std::vector<double> process_cost_;  // per process: the waiting charged to it, for the candidates
  std::unordered_map<NameId, PathWaiting> waiting_by_path_;
  // Each process's wait counted so far per path (ops under a range): ops of a path that
  // wait at once (on several streams) are counted once (PathSpan). Key: process << 32 | path.
  std::unordered_map<uint64_t, PathSpan> wait_spans_;
  uint64_t syncs_ = 0;
  uint64_t next_pick_ = kFirstPick;
  std::vector<ImpactEstimate> merged_impacts_;  // other shards'
  RoleGaps::ProcessSums merged_role_sums_;       // likewise
};

// How many standard errors a seat's (or a rank's, its seats merged) mean gap excess over its
// peers' is above zero: a rank whose own delays are systematic, last at the op or not. A mean
// under kMinGapSpreadUs (straggler_class.h) reads 0, and the spread is taken as at least that.
double gapExcessZ(const ArrivalTally::Seat& s);

// What the stream gathered for the straggler tables: the arrivals (with the gaps that tell
// why a straggler was late: straggler_class.h), the collectives by shape for the slow links
// (slow_links.h) and the lateness for the heatmap (lateness_heatmap.h).
// busy: the compute time in the flagged ranks' gaps (gap_busy_time.h), asked for
// flaggedStragglers(); nullptr: measured from the run's timelines (a run held whole).
struct StragglerInputs {
  const ArrivalTally& arrivals;
  const CollShapeTally& shapes;
  const TransferCellTally& transfers;
  const LatenessBins& lateness;
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
