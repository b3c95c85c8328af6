#include "tools/report/output/page_parts.h"

#include <algorithm>
#include <cctype>

#include "tools/report/evidence_words.h"
#include "tools/report/output/report_charts.h"
#include "tools/report/output/report_rows.h"
#include "tools/report/output/report_tables.h"

namespace commtrace::report::pages {

void findings(const Report& r, Page& page) {
  page.section("findings", "Findings", "");
  page.numbered(r.findings, "none: no straggler, slow link, exposed communication or bandwidth outlier stood out");
}

void advice(const Report& r, Page& page) {
  if (r.advice.empty()) return;
  page.section("advice", "Advice", "what to try, and the numbers behind it");
  std::vector<std::string> items;
  for (const AdviceRow& a : r.advice) {
    std::string advice = a.advice;
    if (!advice.empty()) advice[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(advice[0])));
    items.push_back(advice + ". Because: " + a.evidence + ".");
  }
  page.numbered(items, "");
}

void run(const Report& r, Page& page) {
  page.section("run", "Run " + r.run.dir, "");
  page.fields(tables::runFields(r));
  page.lines("problems", r.run.problems, Rows::kRanking);
}

void communicators(const Report& r, Page& page) {
  page.section("communicators", "Communicators (" + std::to_string(r.communicators.size()) + ")", "");
  page.table(tables::communicators(r.communicators), Rows::kInventory, "none recorded");
}

void bandwidth(const Report& r, Page& page) {
  page.section("bandwidth", "Bandwidth", "nccl-tests algBw and busBw, median over instances");
  page.table(tables::bandwidth(r.bandwidth), Rows::kInventory, "no collective or transfer recorded");
  for (const std::string& note : tables::bandwidthNotes(r.bandwidth)) page.note(note);
  page.section("bandwidth-plots", "Bandwidth by message size", "");
  page.chart([&r] { return charts::bandwidthPlots(r.bandwidth); });
}

void bandwidthSeries(const Report& r, Page& page) {
  page.section("bandwidth-series", "Bandwidth over time", "");
  page.chart([&r] { return charts::bandwidthSeriesChart(r.bandwidth_series); });
}

void stragglers(const Report& r, Page& page) {
  const StragglerReport& s = r.stragglers;
  page.section("stragglers", "Stragglers", "the waiting each rank's own delays caused, traced back from where it was passed on");
  page.table(tables::stragglers(s.ranks), Rows::kRanking, "no collective instance had GPU times on two or more ranks");
  for (const StragglerRow& row : s.ranks)
    if (row.flagged) page.note("rank " + std::to_string(row.rank) + ": " + evidenceWords(row));
  if (!s.ranks.empty()) page.note(tables::stragglerConfidenceNote());
}

void stragglerHosts(const Report& r, Page& page) {
  if (r.stragglers.hosts.size() < 2) return;
  page.subsection("Stragglers by host");
  page.table(tables::stragglerHosts(r.stragglers.hosts), Rows::kRanking, "");
}

void stragglerComms(const Report& r, Page& page) {
  if (r.stragglers.comms.empty()) return;
  page.subsection("Stragglers by communicator");
  page.table(tables::stragglerComms(r.stragglers.comms), Rows::kRanking, "");
}

void links(const Report& r, Page& page) {
  const std::vector<SlowLinkRow>& links = r.stragglers.links;
  page.section("links", "Links", "slowest relative to links of their kind first");
  page.table(tables::links(links), Rows::kRanking, "no op crossing a rank pair had GPU times");
  for (const SlowLinkRow& l : links)
    if (l.flagged) page.note(std::to_string(l.a) + " <-> " + std::to_string(l.b) + ": " + evidenceWords(l));
  if (!links.empty()) page.note(tables::linkConfidenceNote());
}

void lateness(const Report& r, Page& page) {
  page.section("lateness", "Lateness over time", "");
  page.chart([&r] { return charts::latenessChart(r.stragglers.heatmap); });
}

void matrix(const Report& r, Page& page) {
  page.section("matrix", "Communication matrix", "bytes between rank pairs, the heaviest pairs first");
  page.chart([&r] { return charts::matrixChart(r.matrix); });
  page.table(tables::heaviestPairs(r.matrix), Rows::kRanking, "no bytes moved between ranks");
  if (!r.matrix.model.empty()) page.note(r.matrix.model);
}

void mismatches(const Report& r, Page& page) {
  page.section("mismatches", "Mismatches and hangs (" + std::to_string(r.mismatches_total) + ")", "");
  page.table(tables::mismatches(r.mismatches), Rows::kRanking, "none: every rank recorded every instance of its communicators");
  if (r.mismatches_total > r.mismatches.size())
    page.note("(" + std::to_string(r.mismatches_total - r.mismatches.size()) + " more were counted but not listed)");
}

void overlap(const Report& r, Page& page) {
  page.section("overlap", "Overlap", "communication kernels under compute kernels, per rank");
  page.table(tables::overlap(r.overlap), Rows::kInventory, "no process recorded communication kernels");
  for (const std::string& reason : tables::unavailableReasons(r.overlap)) page.note("- = not measured: " + reason);
  if (const std::string note = tables::kernelClockNote(r.overlap); !note.empty()) page.note(note);
  if (const std::string note = tables::outOfOrderNote(r.overlap); !note.empty()) page.note(note);
  page.chart([&r] { return charts::overlapCharts(r.overlap); });
}

void kernels(const Report& r, Page& page) {
  const KernelBreakdown& k = r.kernels;
  page.section("kernels", "GPU kernels", "most GPU time, all ranks");
  page.table(tables::kernels(k.top), Rows::kRanking, "no CUPTI records: the CUPTI face was off, held by another tool, or found no GPU");
  if (!k.types.empty()) {
    page.subsection("GPU time by kernel type (per rank)");
    page.table(tables::kernelTypes(k.types), Rows::kInventory, "");
  }
  page.subsection("Per rank: kernels by GPU time");
  page.table(tables::kernels(k.per_rank), Rows::kDetail, "none");
  page.subsection("Per rank: kernels by number of launches");
  page.table(tables::kernels(k.per_rank_by_count), Rows::kDetail, "none");
}

void cudaSync(const Report& r, Page& page) {
  page.section("cuda-sync", "CPU blocked in CUDA synchronisation", "per rank, call and stream");
  page.table(tables::cudaSync(r.cuda_sync), Rows::kInventory,
             "none recorded: no CUDA sync call went through the preload face (not preloaded, COMMTRACE_CUDA_SYNC=0, or no "
             "dynamic libcudart)");
  const auto waits_for_event = [](const CudaSyncRow& row) {
    return std::any_of(row.calls.begin(), row.calls.end(), [](const CudaSyncCallRow& c) { return c.call == "cudaStreamWaitEvent"; });
  };
  if (std::any_of(r.cuda_sync.begin(), r.cuda_sync.end(), waits_for_event))
    page.note("cudaStreamWaitEvent makes the stream wait, not the CPU: its time is the enqueue");
}

void callPaths(const Report& r, Page& page) {
  if (r.call_paths.empty()) return;
  page.section("call-paths", "Communication by NVTX path",
               "where in the program the ops were issued: the NVTX ranges open on the issuing thread, the steps as one");
  page.table(rows::peopleTable(rows::callPathFields(), r.call_paths), Rows::kRanking, "");
  page.chart([&r] { return charts::callPathChart(r.call_paths); });
}

void callStacks(const Report& r, Page& page) {
  if (r.call_stacks.empty()) return;
  page.section("call-stacks", "Communication by call stack",
               "the functions that called NCCL, from sampled native call stacks (COMMTRACE_STACKS): ops, bytes and time are estimates");
  page.table(rows::peopleTable(rows::callStackFields(), r.call_stacks), Rows::kRanking, "");
  page.chart([&r] { return charts::callStackChart(r.call_stacks); });
  for (const std::string& note : r.call_stack_notes) page.note(note);
}

void clocks(const Report& r, Page& page) {
  page.section("clocks", "Clocks", tables::clockLine(r.clocks));
  page.table(tables::clocks(r.clocks), Rows::kDetail, "no process had collective completions to anchor on");
}

}  // namespace commtrace::report::pages
