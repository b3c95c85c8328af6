// Runs every analysis over a loaded run and ranks the findings: the one call between
// reading a run and printing it.
#pragma once

#include <memory>
#include <vector>

#include "tools/report/analyses/bandwidth.h"
#include "tools/report/analyses/bandwidth_series.h"
#include "tools/report/analyses/coll_shapes.h"
#include "tools/report/analyses/comm_matrix.h"
#include "tools/report/analyses/mismatches.h"
#include "tools/report/analyses/overlap.h"
#include "tools/report/analyses/peer_waits.h"
#include "tools/report/analyses/rank_traffic.h"
#include "tools/report/analyses/shard_call_gate.h"
#include "tools/report/analyses/stragglers.h"
#include "tools/report/load/archived_name.h"
#include "tools/report/load/clock_align.h"
#include "tools/report/load/sink_thread.h"
#include "tools/report/report.h"
#include "tools/report/load/run_model.h"

namespace commtrace::report {

// The analyses that take the run op by op (load/op_stream.h): handed to the loader
// (LoadOptions::stream) to be fed while the files are read.
class StreamedAnalyses : public OpFanout {
 public:
  StreamedAnalyses() : OpFanout(fedSinks(*this)) {}
  StreamedAnalyses(const StreamedAnalyses&) = delete;
  StreamedAnalyses& operator=(const StreamedAnalyses&) = delete;

  // Fed with a shard of run (its window sharded once loading starts): the pieces of calls,
  // which come whatever their time, pass a ShardCallGate (analyses/shard_call_gate.h).
  void gateCallPieces(const RunModel& run) { shard_run_ = &run; }
  void transfer(const P2pTransfer& transfer) override;
  void finish() override;

  // Adds another's state: a shard of the same run (another set of files, another machine),
  // both finished or both not yet. The calls of AlltoAll, Gather and Scatter are grouped
  // within a shard: a shard holds every piece of the calls it holds (shard by communicator).
  void merge(const StreamedAnalyses& other);
  // What the analyses hold so far, while ops are still coming (a live run): a finished copy,
  // communicators numbered as first seen (the joiner's order until its finish()), without
  // the calls of pieces still being grouped. This one goes on taking ops.
  std::unique_ptr<StreamedAnalyses> snapshot() const;
  // A finished state as a shard writes it (tools/report/shard/), and read back into one that
  // has taken no op; merge() then adds it as it would the shard's own.
  void save(StateOut& ar) const;
  void load(StateIn& ar);

  BandwidthTally bandwidth;
  TransferCellTally transfer_cells;
  P2pCallJoiner calls{[this](const P2pCall& call) {
    bandwidth.call(call);
    transfer_cells.call(call);
  }};
  BandwidthSeriesTally bandwidth_series;
  ArrivalTally arrivals;  // read it after finish(), or arrivals_thread.settle()
  SinkThread arrivals_thread{arrivals};  // the root-cause walk beside the joiner
  CollShapeTally shapes;
  CollGapTally gaps;
  TransferGapTally transfer_gaps;
  PeerWaitTally peer_waits;
  AnchorSample anchors;  // for alignClocks(run, anchors)
  LatenessBins lateness;
  RankTrafficTally traffic;

  // Each streamed analysis, registered once (kRegistry, build_report.cc): the sink the
  // joiner feeds for it, how a shard's state adds in and travels (none: the call joiner, as a
  // shard holds every piece of the calls it holds, and has handed them on when finished). A
  // new analysis is a member above and a line there.
  struct Registered {
    JoinedOpSink* (*fed)(StreamedAnalyses&);
    void (*merge)(StreamedAnalyses& into, const StreamedAnalyses& from);
    void (*save)(StateOut& ar, const StreamedAnalyses& from);
    void (*load)(StateIn& ar, StreamedAnalyses& into);
  };

 private:
  static std::vector<JoinedOpSink*> fedSinks(StreamedAnalyses& analyses);
  // The analyses themselves, behind the gate.
  struct Ungated : JoinedOpSink {
    explicit Ungated(StreamedAnalyses& owner) : analyses(owner) {}
    void collective(const CollInstance&, std::span<const MemberView>) override {}
    void transfer(const P2pTransfer& transfer) override { analyses.OpFanout::transfer(transfer); }
    StreamedAnalyses& analyses;
  };
  const RunModel* shard_run_ = nullptr;
  Ungated ungated_{*this};
  std::unique_ptr<ShardCallGate> gate_;  // made at the first piece of a shard's call
};

// step_rule: which NVTX range is a step (StepRule). streamed: fed with every op of run.
// progress: shown while overlap reads the files again (when the collectives were not kept).
Report buildReport(const RunModel& run, const ClockAlignment& clocks, const StepRule& step_rule,
                   const StreamedAnalyses& streamed, ProgressLine* progress = nullptr);
// The same for a run held whole: its ops are replayed through the streamed analyses first.
Report buildReport(const RunModel& run, const ClockAlignment& clocks, const StepRule& step_rule = {});

}  // namespace commtrace::report
