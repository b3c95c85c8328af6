// Why a straggler was late (docs/report.md), from the GPU gap before
// each op it arrived last at (from the end of its previous op to this op's start, on its own
// GPU clock), compared with its peers' gaps before the same op:
// - longer, and compute kernels fill most of the extra (CUPTI records) -> compute
// - longer and the extra idle, or the CPU enqueued the op late         -> host
// - longer, with neither kernel records nor clock samples            -> compute, less sure:
//   host-side delay is not ruled out
// - host, but now and then: a delay at under half its synchronizations
//                                                                     -> input (an input
//   pipeline's stall every few steps; a periodic checkpoint or garbage collection reads the same)
// - no longer: the lateness came from an earlier op                  -> network when the rank
//   is an end of a slow link, else unknown
//
// The evidence is gathered from the root-cause attribution as it goes, for every process where
// it created a delay (which ranks are stragglers is known only at the end; where a rank only
// passed a delay on, or came last by chance, says nothing of why it is slow), at a collective
// or at a send or receive: the gaps, its peers' typical gap and the lateness go into quantile
// sketches (exact up to 4,096 distinct values); what needs the
// clock maps fitted at the files' ends (compute kernels in the gap, when the CPU enqueued the
// op) is kept for a sample of a process's late arrivals, the kSampled with the smallest hash,
// with up to kPeersKept of its peers' gaps each (a collective's other members; a send or
// receive has none: its other end does other work), and measured at the end: the compute
// time in those gaps by overlap's pass over each process's kernels (gap_busy_time.h). Past
// 1,024 processes the sample is smaller (width_budget.h), down to kFewestSampled late
// arrivals with kFewestPeersKept peers each.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "tools/report/analyses/slow_links_rows.h"
#include "tools/report/analyses/stragglers_rows.h"
#include "tools/report/analyses/wait_attribution.h"
#include "tools/report/load/bottom_k.h"
#include "tools/report/load/op_stream.h"
#include "tools/report/load/quantile_sketch.h"
#include "tools/report/load/run_model.h"

namespace commtrace::report {

// A gap a few timer ticks longer than its peers' (a kernel's launch, how the channels start)
// is no delay, however often it is measured: a gap excess under this many microseconds.
constexpr double kMinGapSpreadUs = 10.0;

class StragglerEvidence {
 public:
  static constexpr size_t kSampled = 256;
  static constexpr size_t kFewestSampled = 32;
  static constexpr size_t kPeersKept = 16;
  static constexpr size_t kFewestPeersKept = 4;

  // A synchronization as WaitAttribution attributed it.
  void add(const Attributed& a);
  // Adds another's evidence of the same run (a shard's): the smaller of the two samples' sizes.
  void merge(const StragglerEvidence& other);
  // The run's width, which sizes the samples (JoinedOpSink::runWidth).
  void runWidth(size_t processes);
  size_t sampled() const { return sampled_; }  // late arrivals kept per process, at most
  size_t peersKept() const { return peers_kept_; }  // peers kept per late arrival, at most

  using PeerGap = RolePeer;  // a peer's op and the gap before it
  // One late arrival kept for the measures that need the clock maps.
  struct LateArrival {
    uint64_t hash = 0;
    uint64_t gpu_start_ns = 0;
    uint64_t gap_ns = 0;
    uint64_t cpu_start_ns = 0;  // 0: not recorded
    double peer_gap_us = 0;     // the median over every peer, not only those kept
    std::vector<PeerGap> peers;
    template <class Archive>
    void serialize(Archive& ar) {
      ar(hash, gpu_start_ns, gap_ns, cpu_start_ns, peer_gap_us, peers);
    }
  };
  // A process's gaps where it created a delay, its peers' typical gap, the excess of its
  // over theirs and its lateness (us).
  struct Gaps {
    QuantileSketch gap_us, peer_gap_us, lateness_us;
    SignedQuantileSketch excess_us;
    void add(double gap_us, double peer_gap_us, double lateness_us);
    void merge(const Gaps& other);
    template <class Archive>
    void serialize(Archive& ar) {
      ar(gap_us, peer_gap_us, lateness_us, excess_us);
    }
  };
  struct Process {
    uint64_t delays = 0;  // synchronizations at which it created a delay of kMinGapSpreadUs or more
    BottomK<LateArrival> sample;  // up to kSampled, the smallest hashes
    // Its gaps are staged a few at a time, in one place, before going into the four sketches
    // (one cache miss per delay, not one per sketch); read them whole with mergeGapsInto.
    void addGaps(double gap_us, double peer_gap_us, double lateness_us);
    void mergeGapsInto(Gaps& into) const;
    void merge(const Process& other);
    template <class Archive>
    void serialize(Archive& ar) {
      ar(delays, sample, gaps_, staged_, staged_size_);
    }

   private:
    static constexpr size_t kStaged = 8;
    void unstage(Gaps& into) const;
    Gaps gaps_;
    std::array<std::array<double, 3>, kStaged> staged_{};  // (gap, peer gap, lateness)
    size_t staged_size_ = 0;
  };
  const std::vector<Process>& processes() const { return processes_; }
  // Per process (as processes()), the synchronizations it was in: apart from the rest, as
  // every member of every synchronization counts here.
  const std::vector<uint64_t>& syncs() const { return syncs_; }
  // A shard's state (tools/report/shard/).
  template <class Archive>
  void serialize(Archive& ar) {
    ar(processes_, syncs_, sampled_, peers_kept_);
  }

 private:
  void resize(size_t processes);  // processes_ and syncs_ alike

  void cutSamples(size_t sampled);
  // Into spread_peers_, a synchronization's peers spread over its communicator (those not
  // last, with a gap): the same for each of its late arrivals sampled, so found once a
  // synchronization, at the first (per late arrival, a 16,384-member instance's members were
  // read twice for each).
  void findSpreadPeers(const Attributed& a);

  std::vector<PeerGap> spread_peers_;

  std::vector<Process> processes_;
  std::vector<uint64_t> syncs_;
  size_t sampled_ = kSampled;
  size_t peers_kept_ = kPeersKept;  // for late arrivals sampled from now on
};

// The figures a class was decided on (StragglerRow's gap fields; NaN: not measured).
struct GapFigures {
  uint64_t ops = 0;
  uint64_t sampled = 0;
  double gap_us = StragglerRow::kNotMeasured, peer_gap_us = StragglerRow::kNotMeasured, excess_us = StragglerRow::kNotMeasured;
  double lateness_us = StragglerRow::kNotMeasured, compute_share = StragglerRow::kNotMeasured, enqueue_fraction = StragglerRow::kNotMeasured;
  double delay_fraction = StragglerRow::kNotMeasured;
};

struct StragglerClass {
  std::string cls;        // "compute", "host", "input", "network", "unknown"
  double certainty = 0;   // 0..1, how directly the evidence shows the class
  StragglerBasis basis = StragglerBasis::kNone;
  GapFigures figures;
};

// The first cut of the class from the gaps alone (what the live alerts have): no gap measured
// -> unknown; a gap excess over the peers' that does not explain the lateness -> network at
// an end of a slow link, else unknown; a longer gap -> compute, inferred (kInferred), which
// kernel records or clock samples refine into compute or host where they exist.
StragglerClass classFromGaps(bool measured, double excess_us, double lateness_us, bool ends_slow_link);

class GapBusyTime;

// ranks: the flagged global ranks; links: the link verdicts of slow_links.h; busy: the
// compute time in their sampled gaps (gap_busy_time.h), asked for these ranks.
std::map<int, StragglerClass> classifyStragglers(const RunModel& run, const StragglerEvidence& evidence,
                                                 const std::vector<int>& ranks, const std::vector<SlowLinkRow>& links,
                                                 const GapBusyTime& busy);

}  // namespace commtrace::report
