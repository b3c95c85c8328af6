#include "tools/report/output/report_tables.h"

#include <algorithm>

#include "tools/report/analyses/overlap_sweep.h"
#include "tools/report/analyses/slow_links.h"
#include "tools/report/analyses/stragglers.h"
#include "tools/report/format.h"

namespace commtrace::report::tables {
namespace {

constexpr auto kRight = Table::Align::kRight;

std::string yesNo(bool b) { return b ? "yes" : "no"; }

}  // namespace

std::string commLabel(uint64_t id, const std::string& name) { return name.empty() ? fmt::hexId(id) : name; }

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

// "<from> to <to>: N ops outside it left out", an open end said as such.
std::string windowSpan(const RunSummary& s) {
  const std::string from = s.window_from_utc_ns == 0 ? "the start" : fmt::utcTime(s.window_from_utc_ns);
  const std::string to = s.window_to_utc_ns == UINT64_MAX ? "the end" : fmt::utcTime(s.window_to_utc_ns);
  return from + " to " + to + " (--from/--to): " + fmt::counted(s.ops_outside_window, "op") +
         " outside it left out; kernel totals cover the whole run";
}

Fields runFields(const Report& r) {
  const RunSummary& s = r.run;
  const int unreadable = s.files - s.processes;
  std::string files = std::to_string(s.files) + " found: " + std::to_string(s.processes) + " read (" +
                      std::to_string(s.damaged_files) + " damaged)";
  if (unreadable > 0) files += ", " + std::to_string(unreadable) + " not readable as traces";
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
  return fields;
}

Table clocks(const ClockSummary& c) {
  Table t{{{"rank", kRight}, {"host"}, {"aligned"}, {"offset", kRight}, {"drift ppm", kRight}, {"residual", kRight}, {"anchors", kRight},
           {"outliers", kRight}},
          {}};
  for (const ClockFit& f : c.fits) {
    const std::string drift = !f.aligned ? "-" : f.drift_fitted ? fmt::fixed(f.drift_ppm, 2) : "not fitted";
    t.rows.push_back({std::to_string(f.rank), f.host, yesNo(f.aligned), f.aligned ? fmt::duration(f.offset_us) : "-", drift,
                      f.aligned ? fmt::duration(f.residual_us) : "-", std::to_string(f.anchors), std::to_string(f.outliers)});
  }
  return t;
}

Table communicators(const std::vector<CommunicatorRow>& rows) {
  Table t{{{"id"}, {"name"}, {"size", kRight}, {"hosts", kRight}, {"ranks"}, {"instances", kRight}}, {}};
  for (const CommunicatorRow& c : rows)
    t.rows.push_back({fmt::hexId(c.id), c.name.empty() ? "-" : c.name, std::to_string(c.size), std::to_string(c.hosts), fmt::rankList(c.ranks),
                      std::to_string(c.instances)});
  return t;
}

Table bandwidth(const std::vector<BandwidthRow>& rows) {
  Table t{{{"comm"}, {"func"}, {"size", kRight}, {"algo"}, {"proto"}, {"count", kRight}, {"time p50", kRight}, {"time p90", kRight},
           {"algBw GB/s", kRight}, {"busBw GB/s", kRight}},
          {}};
  for (const BandwidthRow& b : rows) {
    const bool timed = b.timed > 0, has_bw = b.no_bandwidth.empty();
    const std::string mark = b.percentile_error > 0 ? "~" : "";
    t.rows.push_back({commLabel(b.comm, b.comm_name), b.func, fmt::bytes(b.bytes), b.algo, b.proto, std::to_string(b.count),
                      timed ? mark + fmt::duration(b.time_us_p50) : "-", timed ? mark + fmt::duration(b.time_us_p90) : "-",
                      has_bw ? mark + fmt::bandwidth(b.algbw_gbs_p50) : "-", has_bw ? mark + fmt::bandwidth(b.busbw_gbs_p50) : "-"});
  }
  return t;
}

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

Table stragglers(std::vector<StragglerRow> rows) {
  std::stable_sort(rows.begin(), rows.end(), [](const StragglerRow& a, const StragglerRow& b) { return a.wait_caused_us > b.wait_caused_us; });
  Table t{{{"rank", kRight}, {"host"}, {"wait caused", kRight}, {"last in", kRight}, {"mean lateness", kRight}, {"class"},
           {"confidence", kRight}, {"flagged"}},
          {}};
  for (const StragglerRow& s : rows)
    t.rows.push_back({std::to_string(s.rank), s.host, fmt::duration(s.wait_caused_us), fmt::percent(s.late_fraction),
                      fmt::duration(s.mean_lateness_us), s.cls, fmt::fixed(s.confidence, 2), yesNo(s.flagged)});
  return t;
}

Table stragglerHosts(const std::vector<HostStragglerRow>& rows) {
  Table t{{{"host"}, {"ranks"}, {"wait caused", kRight}, {"last in", kRight}}, {}};
  for (const HostStragglerRow& h : rows)
    t.rows.push_back({h.host, fmt::rankList(h.ranks), fmt::duration(h.wait_caused_us), fmt::percent(h.late_fraction)});
  return t;
}

Table stragglerComms(const std::vector<CommStragglerRow>& rows) {
  Table t{{{"comm"}, {"worst rank", kRight}, {"its wait caused", kRight}, {"all waiting", kRight}, {"instances", kRight}}, {}};
  for (const CommStragglerRow& c : rows)
    t.rows.push_back({commLabel(c.comm, c.comm_name), std::to_string(c.worst_rank), fmt::duration(c.wait_caused_us),
                      fmt::duration(c.total_wait_us), std::to_string(c.instances)});
  return t;
}

Table links(const std::vector<SlowLinkRow>& rows) {
  Table t{{{"ranks"}, {"hosts"}, {"kind"}, {"achieved", kRight}, {"median of kind", kRight}, {"ops", kRight}, {"confidence", kRight},
           {"flagged"}},
          {}};
  for (const SlowLinkRow& l : rows)
    t.rows.push_back({std::to_string(l.a) + " <-> " + std::to_string(l.b), l.hosts, l.inter_host ? "inter-host" : "intra-host",
                      fmt::gbs(l.achieved_gbs), fmt::gbs(l.peer_median_gbs), std::to_string(l.ops), fmt::fixed(l.confidence, 2), yesNo(l.flagged)});
  return t;
}

std::string stragglerConfidenceNote() {
  return "confidence, 0 to 1: how clearly the rank is a straggler. A rank is flagged when it arrives last z >= " +
         fmt::fixed(kMinZ, 0) + " standard deviations more often than chance and causes >= " + fmt::fixed(kMinWaitRatio, 0) +
         "x the median rank's waiting: 0.5 at both thresholds, 0.75 at twice both, 1 at three times both. A flagged "
         "rank's value is scaled down (at most halved) when the evidence for its cause is indirect.";
}

std::string linkConfidenceNote() {
  return "confidence, 0 to 1: how far below " + fmt::percent(kSlowLinkRatio) +
         " of the median of its kind the link's best bandwidth is (0 at that line, 1 at nothing); less when the link "
         "was seen in fewer than 3 ops, or only in collectives that also crossed other pairs.";
}

Table heaviestPairs(const CommMatrix& m) {
  Table t{{{"src", kRight}, {"dst", kRight}, {"bytes", kRight}, {"time", kRight}, {"achieved", kRight}, {"source"}}, {}};
  const auto all = std::find_if(m.slices.begin(), m.slices.end(), [](const MatrixSlice& s) { return s.comm == 0 && s.func.empty(); });
  if (all == m.slices.end()) return t;
  std::vector<MatrixCell> cells = all->cells;
  std::stable_sort(cells.begin(), cells.end(), [](const MatrixCell& a, const MatrixCell& b) { return a.bytes > b.bytes; });
  for (const MatrixCell& c : cells)
    t.rows.push_back({std::to_string(c.src), std::to_string(c.dst), fmt::bytes(c.bytes), c.time_us > 0 ? fmt::duration(c.time_us) : "-",
                      c.time_us > 0 ? fmt::gbs(c.gbs) : "-", c.measured ? "measured" : "modelled"});
  return t;
}

Table mismatches(const std::vector<MismatchRow>& rows) {
  Table t{{{"comm"}, {"func"}, {"seq", kRight}, {"kind"}, {"ranks"}, {"detail"}}, {}};
  for (const MismatchRow& m : rows)
    t.rows.push_back({commLabel(m.comm, m.comm_name), m.func, std::to_string(m.seq), m.kind, (m.comm_ranks ? "comm ranks " : "") + fmt::rankList(m.missing_ranks),
                      m.detail});
  return t;
}

Table overlap(const std::vector<OverlapRow>& rows) {
  // "comm time": communication, not a communicator, which "comm" names in every other table.
  Table t{{{"rank", kRight}, {"comm time", kRight}, {"overlapped", kRight}, {"exposed", kRight}, {"idle", kRight},
           {"overlap", kRight}, {"steps"}},
          {}};
  for (const OverlapRow& o : rows) {
    const std::string steps = o.step_count == 0 ? "none found" : std::to_string(o.step_count) + " (" + o.step_source + ")";
    if (o.available)
      t.rows.push_back({std::to_string(o.rank), fmt::duration(o.comm_us), fmt::duration(o.overlapped_us), fmt::duration(o.exposed_us),
                        fmt::duration(o.idle_us), fmt::fixed(o.overlap_pct, 1) + '%', steps});
    else
      t.rows.push_back({std::to_string(o.rank), o.comm_us > 0 ? fmt::duration(o.comm_us) : "-", "-", "-", "-", "-", steps});
  }
  return t;
}

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

Table peerWaits(const std::vector<PeerWaitRow>& rows) {
  Table t{{{"rank", kRight}, {"waited for", kRight}, {"transfers", kRight}, {"waited in", kRight}, {"wait", kRight},
           {"per step", kRight}, {"of its step", kRight}},
          {}};
  for (const PeerWaitRow& w : rows)
    t.rows.push_back({std::to_string(w.rank), "rank " + std::to_string(w.peer), std::to_string(w.transfers), std::to_string(w.waited),
                      fmt::duration(w.wait_us), w.steps > 0 ? fmt::duration(w.wait_per_step_us) : "-",
                      w.step_share_pct > 0 ? fmt::fixed(w.step_share_pct, 1) + '%' : "-"});
  return t;
}

Table kernels(const std::vector<KernelRow>& rows) {
  Table t{{{"rank", kRight}, {"kernel"}, {"type"}, {"ranks", kRight}, {"count", kRight}, {"total", kRight}, {"avg", kRight},
           {"max", kRight}, {"share", kRight}},
          {}};
  for (const KernelRow& k : rows)
    t.rows.push_back({k.rank < 0 ? "all" : std::to_string(k.rank), fmt::kernelName(k.name), k.type, std::to_string(k.ranks), std::to_string(k.count),
                      fmt::duration(k.total_us), fmt::duration(k.avg_us), fmt::duration(k.max_us), fmt::fixed(k.share_pct, 1) + '%'});
  return t;
}

Table kernelTypes(const std::vector<KernelTypeRow>& rows) {
  Table t{{{"rank", kRight}, {"computation", kRight}, {"communication", kRight}, {"memory", kRight}}, {}};
  for (const KernelTypeRow& k : rows) {
    const double all = k.computation_us + k.communication_us + k.memory_us;
    const auto cell = [&](double v) { return fmt::duration(v) + " (" + fmt::fixed(all > 0 ? 100.0 * v / all : 0, 1) + "%)"; };
    t.rows.push_back({std::to_string(k.rank), cell(k.computation_us), cell(k.communication_us), cell(k.memory_us)});
  }
  return t;
}

Table cudaSync(const std::vector<CudaSyncRow>& rows) {
  Table t{{{"rank", kRight}, {"call"}, {"stream"}, {"calls", kRight}, {"total", kRight}, {"p50", kRight}, {"max", kRight}, {"failed", kRight}},
          {}};
  const auto add = [&](const std::string& rank, const std::string& call, const std::string& stream, const CudaSyncStats& s) {
    t.rows.push_back({rank, call, stream, std::to_string(s.count), fmt::duration(s.total_us), fmt::duration(s.p50_us),
                      fmt::duration(s.max_us), std::to_string(s.failed)});
  };
  for (const CudaSyncRow& r : rows)
    for (const CudaSyncCallRow& c : r.calls) {
      const std::string streams = c.streams.empty()       ? "-"
                                  : c.streams.size() == 1 ? streamLabel(c.streams.front().stream)
                                                          : "all " + std::to_string(c.streams.size());
      add(std::to_string(r.rank), c.call, streams, c.stats);
      if (c.streams.size() > 1)
        for (const CudaSyncStreamRow& s : c.streams) add("", "", "  " + streamLabel(s.stream), s.stats);
    }
  return t;
}

}  // namespace commtrace::report::tables
