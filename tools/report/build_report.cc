#include "tools/report/build_report.h"

#include <array>
// What the analyses' states hold, for save() and load().
#include <cereal/types/array.hpp>
#include <cereal/types/map.hpp>
#include <cereal/types/tuple.hpp>
#include <cereal/types/unordered_map.hpp>
#include <cereal/types/utility.hpp>
#include <cereal/types/vector.hpp>

#include "tools/report/advice_words.h"
#include "tools/report/analyses/bandwidth.h"
#include "tools/report/analyses/call_paths.h"
#include "tools/report/analyses/call_stacks.h"
#include "tools/report/analyses/comm_matrix.h"
#include "tools/report/analyses/cuda_sync.h"
#include "tools/report/analyses/findings.h"
#include "tools/report/analyses/kernel_breakdown.h"
#include "tools/report/analyses/mismatches.h"
#include "tools/report/analyses/overlap.h"
#include "tools/report/analyses/parallelism.h"
#include "tools/report/analyses/peer_waits.h"
#include "tools/report/analyses/stragglers.h"
#include "tools/report/evidence_words.h"
#include "tools/report/finding_words.h"
#include "tools/report/load/run_loader.h"
#include "tools/report/load/run_model_archive.h"
#include "tools/report/load/run_summary.h"

namespace commtrace::report {

namespace {

using Registered = StreamedAnalyses::Registered;

// An analysis the joiner feeds itself, merged member by member.
template <auto kMember>
constexpr Registered fedAndMerged() {
  return {[](StreamedAnalyses& s) -> JoinedOpSink* { return &(s.*kMember); },
          [](StreamedAnalyses& into, const StreamedAnalyses& from) { (into.*kMember).merge(from.*kMember); },
          [](StateOut& ar, const StreamedAnalyses& from) { ar(from.*kMember); },
          [](StateIn& ar, StreamedAnalyses& into) { ar(into.*kMember); }};
}

// The root-cause walk: fed through its thread, read once the thread has taken every op.
constexpr Registered kArrivals{[](StreamedAnalyses& s) -> JoinedOpSink* { return &s.arrivals_thread; },
                               [](StreamedAnalyses& into, const StreamedAnalyses& from) {
                                 into.arrivals_thread.settle();
                                 from.arrivals_thread.settle();
                                 into.arrivals.merge(from.arrivals);
                               },
                               [](StateOut& ar, const StreamedAnalyses& from) {
                                 from.arrivals_thread.settle();
                                 ar(from.arrivals);
                               },
                               [](StateIn& ar, StreamedAnalyses& into) {
                                 into.arrivals_thread.settle();
                                 ar(into.arrivals);
                               }};

// The call joiner comes first: its finish() hands the last calls to the tallies before
// they finish.
constexpr Registered kCalls{[](StreamedAnalyses& s) -> JoinedOpSink* { return &s.calls; }, nullptr, nullptr, nullptr};

using S = StreamedAnalyses;
constexpr std::array kRegistry{kCalls,
                               fedAndMerged<&S::bandwidth>(),
                               fedAndMerged<&S::bandwidth_series>(),
                               kArrivals,
                               fedAndMerged<&S::shapes>(),
                               fedAndMerged<&S::transfer_cells>(),
                               fedAndMerged<&S::gaps>(),
                               fedAndMerged<&S::transfer_gaps>(),
                               fedAndMerged<&S::peer_waits>(),
                               fedAndMerged<&S::anchors>(),
                               fedAndMerged<&S::lateness>(),
                               fedAndMerged<&S::traffic>()};

}  // namespace

std::vector<JoinedOpSink*> StreamedAnalyses::fedSinks(StreamedAnalyses& analyses) {
  std::vector<JoinedOpSink*> sinks;
  for (const Registered& a : kRegistry) sinks.push_back(a.fed(analyses));
  return sinks;
}

void StreamedAnalyses::merge(const StreamedAnalyses& other) {
  for (const Registered& a : kRegistry)
    if (a.merge != nullptr) a.merge(*this, other);
}

void StreamedAnalyses::transfer(const P2pTransfer& transfer) {
  if (shard_run_ == nullptr || !shard_run_->window.sharded() || !NamePool::isCallPiece(transfer.func)) return OpFanout::transfer(transfer);
  if (gate_ == nullptr) gate_ = std::make_unique<ShardCallGate>(*shard_run_, ungated_);
  gate_->piece(transfer);
}

void StreamedAnalyses::finish() {
  if (gate_ != nullptr) gate_->finish();  // its last pieces reach the analyses before they finish
  OpFanout::finish();
}

void StreamedAnalyses::save(StateOut& ar) const {
  for (const Registered& a : kRegistry)
    if (a.save != nullptr) a.save(ar, *this);
}

void StreamedAnalyses::load(StateIn& ar) {
  for (const Registered& a : kRegistry)
    if (a.load != nullptr) a.load(ar, *this);
}

std::unique_ptr<StreamedAnalyses> StreamedAnalyses::snapshot() const {
  auto copy = std::make_unique<StreamedAnalyses>();
  copy->merge(*this);
  copy->arrivals.snapshotFrom(arrivals);  // with the instances still waiting for earlier ops
  copy->finish();
  return copy;
}

Report buildReport(const RunModel& run, const ClockAlignment& clocks, const StepRule& step_rule) {
  StreamedAnalyses streamed;
  streamed.arrivals.knowHosts(run);
  replayRun(run, streamed);
  return buildReport(run, clocks, step_rule, streamed);
}

Report buildReport(const RunModel& run, const ClockAlignment& clocks, const StepRule& step_rule,
                   const StreamedAnalyses& streamed, ProgressLine* progress) {
  Report report;
  const std::vector<uint64_t> instances = streamed.shapes.instancesPerComm(run.comms.size());
  report.run = summarizeRun(run, instances, streamed.transfer_gaps.transfers());
  report.clocks = clocks.summary;
  report.communicators = communicatorRows(run, instances);
  report.bandwidth = streamed.bandwidth.rows(run);
  report.bandwidth_series = bandwidthSeries(run, clocks, streamed.bandwidth_series);
  report.matrix = communicationMatrix(run, streamed.shapes, streamed.transfer_cells);
  report.rank_traffic = rankTraffic(run, streamed.traffic);
  // Overlap follows each process through its whole run: from its file, one process per
  // thread at a time, where the loader did not keep the collectives; on the way it measures
  // the compute in the flagged stragglers' gaps, and each op's exposed time by NVTX path
  // (from the files only: a run held whole keeps no op's path).
  GapBusyTime busy(run, streamed.arrivals.evidence(), flaggedStragglers(run, streamed.arrivals));
  std::vector<std::vector<PathExposure>> exposed_by_path;
  report.overlap = run.ops_kept ? computeOverlap(run, step_rule, opsFromModel(run), 1, nullptr, &busy)
                                : computeOverlap(run, step_rule, opsFromFiles(run), loaderThreads(), progress, &busy, &exposed_by_path);
  report.kernels = kernelBreakdown(run);
  report.peer_waits = peerWaits(run, streamed.peer_waits, report.overlap);
  report.cuda_sync = cudaSyncWaits(run);
  report.call_paths = commByCallPath(run, exposed_by_path, streamed.arrivals.waitingByPath());
  NativeSymbols symbols;
  report.call_stacks = commByCallStack(run, symbols);
  report.call_stack_notes = pythonFrameNotes(run);
  for (const auto& [module, why] : symbols.unreadable()) report.call_stack_notes.push_back(module + ": its frames are not named (" + why + ")");
  report.stragglers = rankStragglers(run, clocks, {streamed.arrivals, streamed.shapes, streamed.transfer_cells, streamed.lateness, &busy});
  report.mismatches = findMismatches(run, streamed.gaps, streamed.transfer_gaps, report.mismatches_total, &report.collectives_lost_to_drops);
  for (MismatchRow& m : report.mismatches) m.detail = mismatchDetail(m);

  const JobSteps steps = jobSteps(report.overlap, report.run.ranks);
  report.parallelism = recognizeParallelism(report.communicators, report.bandwidth, steps.steps, report.run.ranks);
  for (ParallelismRow& p : report.parallelism) describeParallelism(p);
  for (Finding& f : findFindings(report, run)) {
    f.row.finding = findingWords(f);
    report.findings.push_back(f.row.finding);
    report.finding_details.push_back(std::move(f.row));
  }
  report.advice = adviceFor(report, steps.steps);
  return report;
}

}  // namespace commtrace::report
