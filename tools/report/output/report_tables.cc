#include "tools/report/output/report_tables.h"

#include <algorithm>

#include "tools/report/analyses/overlap_sweep.h"
#include "tools/report/analyses/slow_links.h"
#include "tools/report/analyses/stragglers.h"
#include "tools/report/format.h"
#include "tools/report/output/report_rows.h"

namespace commtrace::report::tables {

std::string clockLine(const ClockSummary& c) {
  if (c.fits.empty()) return "not aligned (no process had collective completions to anchor on)";
  const auto aligned = std::count_if(c.fits.begin(), c.fits.end(), [](const ClockFit& f) { return f.aligned; });
  std::string line = std::to_string(aligned) + " of " + std::to_string(c.fits.size()) + " processes aligned";
  if (aligned > 0) line += "; residual p50 " + fmt::duration(c.residual_us_p50) + ", max " + fmt::duration(c.residual_us_max);
  line += c.cpu_gpu_mapped ? "; CPU times mapped onto the GPU timeline" : "; no clock samples: CPU times stay on their host's clock";
  return line;
}

// "<first> to <last> UTC (<span>)", and where some file stops earlier (a run still being
// written, a rank that died), the time every file reaches.
std::string timeSpan(const RunSummary& s) {
  if (s.last_op_utc_ns == 0) return s.ops == 0 ? "no op recorded" : "not known (these files carry no wall-clock time)";
  std::string span = fmt::utcTime(s.first_op_utc_ns) + " to " + fmt::utcTime(s.last_op_utc_ns) + " (" +
                     fmt::duration(static_cast<double>(s.last_op_utc_ns - s.first_op_utc_ns) / 1e3) + ")";
  constexpr uint64_t kApartNs = 1'000'000'000;  // a flush period or two: files written together end together
  if (s.last_op_utc_ns - s.all_files_reach_utc_ns > kApartNs)
    span += "; every file reaches " + fmt::utcTime(s.all_files_reach_utc_ns) + ", some stop earlier";
  return span;
}

// "<from> to <to>: N ops outside it left out", an open end said as such, an end given as a
// step said as one.
std::string windowSpan(const RunSummary& s) {
  const auto end = [](int64_t step, uint64_t utc_ns, const char* open) {
    const std::string time = utc_ns == 0 || utc_ns == UINT64_MAX ? open : fmt::utcTime(utc_ns);
    return step < 0 ? time : "step " + std::to_string(step) + " (" + time + ")";
  };
  std::string span = end(s.window_from_step, s.window_from_utc_ns, "the start") + " to " + end(s.window_to_step, s.window_to_utc_ns, "the end") +
                     " (--from/--to): " + fmt::counted(s.ops_outside_window, "op") + " outside it left out; kernel totals cover the whole run";
  if (s.window_step_rank >= 0 && !s.window_step_range.empty())
    span += "; steps are rank " + std::to_string(s.window_step_rank) + "'s NVTX step ranges (the first: " + s.window_step_range + ")";
  else if (s.window_step_rank >= 0)
    span += "; steps as rank " + std::to_string(s.window_step_rank) + "'s op sequence repeats, every " + fmt::counted(s.window_step_period, "op");
  return span;
}

Fields runFields(const Report& r) {
  const RunSummary& s = r.run;
  const int unreadable = s.files - s.processes;
  std::string files = std::to_string(s.files) + " found: " + std::to_string(s.processes) + " read (" +
                      std::to_string(s.damaged_files) + " damaged)";
  if (unreadable > 0) files += ", " + std::to_string(unreadable) + " not readable as traces";
  if (s.files_being_written > 0) files += ", " + std::to_string(s.files_being_written) + " still being written";
  if (s.files_left_open > 0)
    files += ", " + std::to_string(s.files_left_open) + " left open by " + fmt::processesOf(s.ranks_left_open) + " (last written " +
             fmt::utcTime(s.left_open_last_written_utc_ns) + ", " +
             fmt::duration(static_cast<double>(s.read_utc_ns - s.left_open_last_written_utc_ns) / 1e3) + " before this report)";
  std::string jobs;
  for (const std::string& j : s.jobs) jobs += (jobs.empty() ? "" : ", ") + j;
  Fields fields{{s.jobs.size() == 1 ? "job" : "jobs", jobs},
                {"files", files},
                {"ranks", std::to_string(s.ranks) + " in " + fmt::counted(s.processes, "process", "processes") + " on " + fmt::counted(s.hosts, "host") + ", " +
                              fmt::counted(s.communicators, "communicator")},
                {"ops", std::to_string(s.ops) + ": " + fmt::counted(s.collective_instances, "collective instance") + ", " +
                            fmt::counted(s.p2p_transfers, "point-to-point transfer")},
                {"time", timeSpan(s)},
                {"missing ranks", s.missing_ranks.empty() ? "none" : fmt::rankList(s.missing_ranks) + " (no trace file)"},
                {"records lost", std::to_string(s.dropped_records) + " dropped before the file (ring full or write failed), " +
                                     std::to_string(s.untracked_events) + " NCCL events not followed"},
                {"clocks", clockLine(r.clocks)}};
  if (s.windowed)
    fields.insert(fields.begin() + 5, {"window", windowSpan(s)});
  if (s.shards > 1)
    fields.push_back({"shards", "merged from " + std::to_string(s.shards) +
                                    " shards' states: the root-cause walk's figures (stragglers, their costs) are estimates, "
                                    "moved a little by each cut between shards; the rest is the whole run's"});
  return fields;
}

Table clocks(const ClockSummary& c) { return rows::peopleTable(rows::clockFitFields(), c.fits); }

Table communicators(const std::vector<CommunicatorRow>& list) { return rows::peopleTable(rows::communicatorFields(), list); }

Table bandwidth(const std::vector<BandwidthRow>& list) { return rows::peopleTable(rows::bandwidthFields(), list); }

std::vector<std::string> bandwidthNotes(const std::vector<BandwidthRow>& rows) {
  std::vector<std::string> notes;
  const auto once = [&](const std::string& note) {
    if (std::find(notes.begin(), notes.end(), note) == notes.end()) notes.push_back(note);
  };
  for (const BandwidthRow& b : rows) {
    if (!b.no_bandwidth.empty()) once("- = " + b.no_bandwidth);
    if (b.percentile_error > 0)
      once("~ = within " + fmt::percent(b.percentile_error) + " of the exact percentile: the row has more distinct values than are kept");
  }
  return notes;
}

Table stragglers(const std::vector<StragglerRow>& list) { return rows::peopleTable(rows::stragglerFields(), list); }

Table stragglerHosts(const std::vector<HostStragglerRow>& list) { return rows::peopleTable(rows::hostStragglerFields(), list); }

Table stragglerComms(const std::vector<CommStragglerRow>& list) { return rows::peopleTable(rows::commStragglerFields(), list); }

Table links(const std::vector<SlowLinkRow>& list) { return rows::peopleTable(rows::linkFields(), list); }

std::string stragglerConfidenceNote() {
  return "confidence, 0 to 1: how clearly the rank is a straggler. A rank is flagged when its GPU gaps before its ops "
         "exceed its peers' by z >= " + fmt::fixed(kMinZ, 0) + " standard errors and its delays cause >= " +
         fmt::fixed(kMinWaitRatio, 0) + "x the typical rank's waiting (waits passed on by ranks that only inherited the "
         "lateness count for the rank that created it): 0.5 at both thresholds, 0.75 at twice both, 1 at three times both. A "
         "flagged rank's value is scaled down (at most halved) when the evidence for its cause is indirect.";
}

std::string linkConfidenceNote() {
  return "confidence, 0 to 1: how far below " + fmt::percent(kSlowLinkRatio) +
         " of the median of its kind the link's best bandwidth is (0 at that line, 1 at nothing); less when the link "
         "was seen in fewer than 3 ops, or only in collectives that also crossed other pairs.";
}

Table heaviestPairs(const CommMatrix& m) {
  const auto all = std::find_if(m.slices.begin(), m.slices.end(), [](const MatrixSlice& s) { return s.comm == 0 && s.func.empty(); });
  std::vector<MatrixCell> cells;
  if (all != m.slices.end()) cells = all->cells;
  std::stable_sort(cells.begin(), cells.end(), [](const MatrixCell& a, const MatrixCell& b) { return a.bytes > b.bytes; });
  return rows::peopleTable(rows::matrixCellFields(), cells);
}

Table mismatches(const std::vector<MismatchRow>& list) { return rows::peopleTable(rows::mismatchFields(), list); }

Table overlap(const std::vector<OverlapRow>& list) { return rows::peopleTable(rows::overlapFields(), list); }

std::vector<std::string> unavailableReasons(const std::vector<OverlapRow>& rows) {
  std::vector<std::string> reasons;
  for (const OverlapRow& o : rows)
    if (!o.available && std::find(reasons.begin(), reasons.end(), o.reason) == reasons.end()) reasons.push_back(o.reason);
  return reasons;
}

std::string outOfOrderNote(const std::vector<OverlapRow>& rows) {
  std::string ranks;
  uint64_t total = 0;
  for (const OverlapRow& o : rows) {
    if (o.out_of_order == 0) continue;
    total += o.out_of_order;
    ranks += (ranks.empty() ? "" : ", ") + std::to_string(o.rank);
  }
  if (total == 0) return "";
  return "approximate on rank(s) " + ranks + ": " + fmt::counted(total, "op or kernel", "ops or kernels") +
         " came more than " + std::to_string(OverlapSweep::kReorderOps) +
         " places out of order in the files and were placed where they came";
}

std::string kernelClockNote(const std::vector<OverlapRow>& rows) {
  uint64_t kernels = 0, matched = 0, ranks = 0;
  double worst = 0;
  for (const OverlapRow& o : rows) {
    if (o.clock_kernels == 0) continue;
    ++ranks;
    kernels += o.clock_kernels;
    matched += o.clock_matched;
    worst = std::max(worst, o.clock_residual_us);
  }
  if (ranks == 0) return "";
  return "compute kernels placed on each GPU's clock through NCCL's kernels, which CUPTI and the plugin both timed: " +
         std::to_string(matched) + " of " + std::to_string(kernels) + " matched on " + std::to_string(ranks) +
         (ranks == 1 ? " rank" : " ranks") + ", residual rms at most " + fmt::duration(worst);
}

std::string streamLabel(uint64_t stream) {
  if (stream == 0) return "legacy default";
  if (stream == 2) return "per-thread default";  // cudaStreamPerThread
  return fmt::hexId(stream);
}

Table kernels(const std::vector<KernelRow>& list) { return rows::peopleTable(rows::kernelFields(), list); }

Table kernelTypes(const std::vector<KernelTypeRow>& list) { return rows::peopleTable(rows::kernelTypeFields(), list); }

// A row per (process, call) and, under a call on several streams, a row per stream: the
// rank, the call's or stream's declared columns, with the stream (or "all N") after the call.
Table cudaSync(const std::vector<CudaSyncRow>& list) {
  Table t{rows::peopleColumns(rows::pick(rows::cudaSyncFields(), {"rank"})), {}};
  const auto call = rows::peopleColumns(rows::cudaSyncCallFields());
  t.columns.insert(t.columns.end(), call.begin(), call.end());
  t.columns.insert(t.columns.begin() + 2, {"stream"});
  for (const CudaSyncRow& r : list)
    for (const CudaSyncCallRow& c : r.calls) {
      std::vector<std::string> row = rows::peopleCells(rows::cudaSyncCallFields(), c);
      const std::string streams = c.streams.empty()       ? "-"
                                  : c.streams.size() == 1 ? streamLabel(c.streams.front().stream)
                                                          : "all " + std::to_string(c.streams.size());
      row.insert(row.begin(), {std::to_string(r.rank)});
      row.insert(row.begin() + 2, streams);
      t.rows.push_back(std::move(row));
      if (c.streams.size() < 2) continue;
      for (const CudaSyncStreamRow& s : c.streams) {
        std::vector<std::string> sub = rows::peopleCells(rows::cudaSyncStreamFields(), s);
        sub.front() = "  " + sub.front();
        sub.insert(sub.begin(), {"", ""});
        t.rows.push_back(std::move(sub));
      }
    }
  return t;
}

}  // namespace commtrace::report::tables
