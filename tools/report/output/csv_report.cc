#include "tools/report/output/csv_report.h"

#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <vector>

#include "tools/report/format.h"

namespace commtrace::report {
namespace {

using Row = std::vector<std::string>;

struct CsvTable {
  std::string file;
  Row header;
  std::vector<Row> rows;
};

// Shortest text that reads back as the same double; not-a-number (no data) is an empty cell.
std::string num(double v) {
  if (!std::isfinite(v)) return "";
  char buf[32];
  return std::string(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
}
std::string num(uint64_t v) { return std::to_string(v); }
std::string num(int v) { return std::to_string(v); }
std::string flag(bool b) { return b ? "true" : "false"; }
std::string commCell(uint64_t id) { return id == 0 ? "" : fmt::hexId(id); }
// A figure that could not be measured is an empty cell, never 0.
std::string numIf(bool known, double v) { return known ? num(v) : ""; }

std::string ranksCell(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : " ") + std::to_string(r);
  return out;
}

// RFC 4180: a field holding a comma, quote or line break is quoted, its quotes doubled.
std::string quoted(const std::string& field) {
  if (field.find_first_of(",\"\r\n") == std::string::npos) return field;
  std::string out = "\"";
  for (char c : field) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + '"';
}

void writeRow(const Row& row, std::ostream& out) {
  for (size_t i = 0; i < row.size(); ++i) out << (i ? "," : "") << quoted(row[i]);
  out << "\r\n";
}

std::string utcCell(uint64_t realtime_ns) { return realtime_ns == 0 ? "" : fmt::isoTime(realtime_ns); }

CsvTable runTable(const RunSummary& s) {
  CsvTable t{"run.csv", {"field", "value"}, {}};
  std::string jobs;
  for (const std::string& j : s.jobs) jobs += (jobs.empty() ? "" : " ") + j;
  t.rows = {{"dir", s.dir},
            {"jobs", jobs},
            {"ranks", num(s.ranks)},
            {"processes", num(s.processes)},
            {"hosts", num(s.hosts)},
            {"communicators", num(s.communicators)},
            {"ops", num(s.ops)},
            {"collective_instances", num(s.collective_instances)},
            {"p2p_transfers", num(s.p2p_transfers)},
            {"dropped_records", num(s.dropped_records)},
            {"untracked_events", num(s.untracked_events)},
            {"files", num(s.files)},
            {"damaged_files", num(s.damaged_files)},
            {"missing_ranks", ranksCell(s.missing_ranks)},
            {"first_op_utc", utcCell(s.first_op_utc_ns)},
            {"last_op_utc", utcCell(s.last_op_utc_ns)},
            {"all_files_reach_utc", utcCell(s.all_files_reach_utc_ns)},
            {"window_from_utc", utcCell(s.window_from_utc_ns)},
            {"window_to_utc", s.window_to_utc_ns == UINT64_MAX ? "" : utcCell(s.window_to_utc_ns)},
            {"ops_outside_window", s.windowed ? num(s.ops_outside_window) : ""}};
  return t;
}

// One column of text lines: problems.csv, findings.csv.
CsvTable linesTable(std::string file, std::string column, const std::vector<std::string>& lines) {
  CsvTable t{std::move(file), {std::move(column)}, {}};
  for (const std::string& line : lines) t.rows.push_back({line});
  return t;
}

CsvTable clocksTable(const ClockSummary& c) {
  CsvTable t{"clocks.csv", {"rank", "host", "aligned", "offset_us", "drift_ppm", "drift_fitted", "residual_us", "anchors", "outliers"}, {}};
  for (const ClockFit& f : c.fits)
    t.rows.push_back({num(f.rank), f.host, flag(f.aligned), numIf(f.aligned, f.offset_us), numIf(f.aligned, f.drift_ppm), flag(f.drift_fitted),
                      numIf(f.aligned, f.residual_us), num(f.anchors), num(f.outliers)});
  return t;
}

CsvTable communicatorsTable(const std::vector<CommunicatorRow>& rows) {
  CsvTable t{"communicators.csv", {"id", "name", "size", "hosts", "instances", "ranks"}, {}};
  for (const CommunicatorRow& c : rows)
    t.rows.push_back({commCell(c.id), c.name, num(c.size), num(c.hosts), num(c.instances), ranksCell(c.ranks)});
  return t;
}

CsvTable bandwidthTable(const std::vector<BandwidthRow>& rows) {
  CsvTable t{"bandwidth.csv",
             {"comm", "comm_name", "func", "bytes", "bucket", "algo", "proto", "count", "timed", "time_us_p50", "time_us_p90", "algbw_gbs_p50",
              "busbw_gbs_p50", "percentile_error", "no_bandwidth"},
             {}};
  for (const BandwidthRow& b : rows) {
    const bool timed = b.timed > 0, has_bw = b.no_bandwidth.empty();
    t.rows.push_back({commCell(b.comm), b.comm_name, b.func, num(b.bytes), b.bucket, b.algo, b.proto, num(b.count), num(b.timed),
                      numIf(timed, b.time_us_p50), numIf(timed, b.time_us_p90), numIf(has_bw, b.algbw_gbs_p50), numIf(has_bw, b.busbw_gbs_p50),
                      num(b.percentile_error), b.no_bandwidth});
  }
  return t;
}

// A ranks x ranks grid: first column the sender, header row the receivers.
template <class T>
CsvTable gridTable(std::string file, const std::vector<std::vector<T>>& grid) {
  CsvTable t{std::move(file), {"src\\dst"}, {}};
  for (size_t dst = 0; dst < grid.size(); ++dst) t.header.push_back(std::to_string(dst));
  for (size_t src = 0; src < grid.size(); ++src) {
    Row row{std::to_string(src)};
    for (const T& v : grid[src]) row.push_back(num(v));
    t.rows.push_back(std::move(row));
  }
  return t;
}

CsvTable matrixCellsTable(const CommMatrix& m) {
  CsvTable t{"matrix_cells.csv", {"slice", "comm", "func", "src", "dst", "bytes", "p2p_bytes", "time_us", "gbs", "measured"}, {}};
  for (const MatrixSlice& s : m.slices)
    for (const MatrixCell& c : s.cells)
      t.rows.push_back({s.label, commCell(s.comm), s.func, num(c.src), num(c.dst), num(c.bytes), num(c.p2p_bytes), num(c.time_us),
                        numIf(c.time_us > 0, c.gbs), flag(c.measured)});
  return t;
}

// Cells that are not known stay empty: no compute records means no overlap figures.
template <class R>
Row overlapCells(const R& r, bool available) {
  const bool comm_known = available || r.comm_us > 0;
  return {comm_known ? num(r.comm_us) : "", available ? num(r.overlapped_us) : "", available ? num(r.exposed_us) : "",
          available ? num(r.idle_us) : ""};
}

CsvTable overlapTable(const std::vector<OverlapRow>& rows) {
  CsvTable t{"overlap.csv",
             {"rank", "available", "reason", "comm_us", "overlapped_us", "exposed_us", "idle_us", "overlap_pct", "step_source", "steps", "out_of_order"},
             {}};
  for (const OverlapRow& o : rows) {
    Row row{num(o.rank), flag(o.available), o.reason};
    for (std::string& cell : overlapCells(o, o.available)) row.push_back(std::move(cell));
    row.insert(row.end(), {o.available ? num(o.overlap_pct) : "", o.step_source, num(static_cast<uint64_t>(o.step_count)), num(o.out_of_order)});
    t.rows.push_back(std::move(row));
  }
  return t;
}

CsvTable overlapStepsTable(const std::vector<OverlapRow>& rows) {
  CsvTable t{"overlap_steps.csv", {"rank", "step", "start_us", "comm_us", "overlapped_us", "exposed_us", "idle_us", "last_step"}, {}};
  for (const OverlapRow& o : rows)
    for (const StepOverlap& s : o.steps) {
      Row row{num(o.rank), num(s.step), num(s.start_us)};
      for (std::string& cell : overlapCells(s, o.available)) row.push_back(std::move(cell));
      row.push_back(num(s.last_step));
      t.rows.push_back(std::move(row));
    }
  return t;
}

CsvTable peerWaitsTable(const std::vector<PeerWaitRow>& rows) {
  CsvTable t{"peer_waits.csv", {"rank", "peer", "transfers", "waited", "wait_us", "steps", "wait_per_step_us", "step_share_pct"}, {}};
  for (const PeerWaitRow& w : rows)
    t.rows.push_back({num(w.rank), num(w.peer), num(w.transfers), num(w.waited), num(w.wait_us), num(w.steps),
                      w.steps > 0 ? num(w.wait_per_step_us) : "", w.step_share_pct > 0 ? num(w.step_share_pct) : ""});
  return t;
}

CsvTable kernelsTable(const std::string& file, const std::vector<const std::vector<KernelRow>*>& lists) {
  CsvTable t{file, {"rank", "name", "type", "ranks", "count", "total_us", "avg_us", "max_us", "share_pct"}, {}};
  for (const auto* list : lists)
    for (const KernelRow& r : *list)
      t.rows.push_back({num(r.rank), r.name, r.type, num(r.ranks), num(r.count), num(r.total_us), num(r.avg_us), num(r.max_us),
                        num(r.share_pct)});
  return t;
}

CsvTable kernelTypesTable(const std::vector<KernelTypeRow>& rows) {
  CsvTable t{"kernel_types.csv", {"rank", "computation_us", "communication_us", "memory_us"}, {}};
  for (const KernelTypeRow& r : rows)
    t.rows.push_back({num(r.rank), num(r.computation_us), num(r.communication_us), num(r.memory_us)});
  return t;
}

Row cudaSyncCells(const CudaSyncStats& s) {
  return {num(s.count), num(s.failed), num(s.total_us), num(s.p50_us), num(s.max_us)};
}

CsvTable cudaSyncTable(const std::vector<CudaSyncRow>& rows) {
  CsvTable t{"cuda_sync.csv", {"rank", "host", "call", "count", "failed", "total_us", "p50_us", "max_us"}, {}};
  for (const CudaSyncRow& r : rows)
    for (const CudaSyncCallRow& c : r.calls) {
      Row row{num(r.rank), r.host, c.call};
      for (std::string& cell : cudaSyncCells(c.stats)) row.push_back(std::move(cell));
      t.rows.push_back(std::move(row));
    }
  return t;
}

CsvTable cudaSyncStreamsTable(const std::vector<CudaSyncRow>& rows) {
  CsvTable t{"cuda_sync_streams.csv", {"rank", "call", "stream", "count", "failed", "total_us", "p50_us", "max_us"}, {}};
  for (const CudaSyncRow& r : rows)
    for (const CudaSyncCallRow& c : r.calls)
      for (const CudaSyncStreamRow& s : c.streams) {
        Row row{num(r.rank), c.call, fmt::hexId(s.stream)};
        for (std::string& cell : cudaSyncCells(s.stats)) row.push_back(std::move(cell));
        t.rows.push_back(std::move(row));
      }
  return t;
}

CsvTable stragglersTable(const std::vector<StragglerRow>& rows) {
  CsvTable t{"stragglers.csv",
             {"rank", "host", "instances", "wait_caused_us", "late_fraction", "mean_lateness_us", "class", "confidence", "flagged", "evidence"},
             {}};
  for (const StragglerRow& s : rows)
    t.rows.push_back({num(s.rank), s.host, num(s.instances), num(s.wait_caused_us), num(s.late_fraction), num(s.mean_lateness_us), s.cls,
                      num(s.confidence), flag(s.flagged), s.evidence});
  return t;
}

CsvTable stragglerHostsTable(const std::vector<HostStragglerRow>& rows) {
  CsvTable t{"straggler_hosts.csv", {"host", "ranks", "wait_caused_us", "late_fraction"}, {}};
  for (const HostStragglerRow& h : rows) t.rows.push_back({h.host, ranksCell(h.ranks), num(h.wait_caused_us), num(h.late_fraction)});
  return t;
}

CsvTable stragglerCommsTable(const std::vector<CommStragglerRow>& rows) {
  CsvTable t{"straggler_comms.csv", {"comm", "comm_name", "worst_rank", "wait_caused_us", "total_wait_us", "instances"}, {}};
  for (const CommStragglerRow& c : rows)
    t.rows.push_back({commCell(c.comm), c.comm_name, num(c.worst_rank), num(c.wait_caused_us), num(c.total_wait_us), num(c.instances)});
  return t;
}

CsvTable linksTable(const std::vector<SlowLinkRow>& rows) {
  CsvTable t{"links.csv",
             {"a", "b", "hosts", "inter_host", "achieved_gbs", "peer_median_gbs", "ops", "confidence", "flagged", "evidence"},
             {}};
  for (const SlowLinkRow& l : rows)
    t.rows.push_back({num(l.a), num(l.b), l.hosts, flag(l.inter_host), num(l.achieved_gbs), num(l.peer_median_gbs), num(l.ops),
                      num(l.confidence), flag(l.flagged), l.evidence});
  return t;
}

// Long format (one row per rank and bin) so that it loads straight into a pivot. Bins are
// spans of the aligned timeline, or of op indices when the clocks could not be aligned.
CsvTable heatmapTable(const LatenessHeatmap& h) {
  const bool by_time = h.axis != "op order";
  CsvTable t{"lateness_heatmap.csv", {"rank", "bin", by_time ? "bin_start_us" : "bin_first_op", "mean_lateness_us"}, {}};
  for (size_t r = 0; r < h.ranks.size() && r < h.mean_lateness_us.size(); ++r)
    for (size_t b = 0; b < h.mean_lateness_us[r].size(); ++b) {
      const double bin = static_cast<double>(b), v = h.mean_lateness_us[r][b];
      t.rows.push_back({num(h.ranks[r]), num(static_cast<uint64_t>(b)), by_time ? num(h.start_us + h.bin_us * bin) : num(h.bin_ops * bin),
                        numIf(v >= 0, v)});
    }
  return t;
}

CsvTable bandwidthSeriesTable(const BandwidthSeries& s) {
  CsvTable t{"bandwidth_series.csv", {"comm", "comm_name", "func", "bin", "start_us", "ops", "busbw_gbs"}, {}};
  for (const BandwidthSeriesRow& r : s.rows)
    for (size_t b = 0; b < r.ops.size(); ++b)
      t.rows.push_back({commCell(r.comm), r.comm_name, r.func, num(static_cast<uint64_t>(b)),
                        num(s.start_us + s.bin_us * static_cast<double>(b)), num(r.ops[b]), numIf(r.busbw_gbs[b] >= 0, r.busbw_gbs[b])});
  return t;
}

CsvTable mismatchesTable(const std::vector<MismatchRow>& rows) {
  CsvTable t{"mismatches.csv", {"comm", "comm_name", "func", "seq", "kind", "missing_ranks", "comm_ranks", "detail"}, {}};
  for (const MismatchRow& m : rows)
    t.rows.push_back({commCell(m.comm), m.comm_name, m.func, num(m.seq), m.kind, ranksCell(m.missing_ranks), flag(m.comm_ranks), m.detail});
  return t;
}

// Each table is built when its file is written and freed before the next: a 1,024-rank
// report's tables built all at once held some 600 MB of cells.
std::vector<std::function<CsvTable()>> tableBuilders(const Report& r) {
  return {[&] { return runTable(r.run); },
          [&] { return linesTable("problems.csv", "problem", r.run.problems); },
          [&] { return linesTable("findings.csv", "finding", r.findings); },
          [&] { return clocksTable(r.clocks); },
          [&] { return communicatorsTable(r.communicators); },
          [&] { return bandwidthTable(r.bandwidth); },
          [&] { return bandwidthSeriesTable(r.bandwidth_series); },
          [&] { return gridTable("matrix_bytes.csv", r.matrix.bytes); },
          [&] { return gridTable("matrix_p2p_bytes.csv", r.matrix.p2p_bytes); },
          [&] { return gridTable("matrix_time_us.csv", r.matrix.time_us); },
          [&] { return matrixCellsTable(r.matrix); },
          [&] { return overlapTable(r.overlap); },
          [&] { return overlapStepsTable(r.overlap); },
          [&] { return peerWaitsTable(r.peer_waits); },
          [&] { return kernelsTable("kernels.csv", {&r.kernels.top, &r.kernels.per_rank}); },
          [&] { return kernelsTable("kernels_by_count.csv", {&r.kernels.per_rank_by_count}); },
          [&] { return kernelTypesTable(r.kernels.types); },
          [&] { return cudaSyncTable(r.cuda_sync); },
          [&] { return cudaSyncStreamsTable(r.cuda_sync); },
          [&] { return stragglersTable(r.stragglers.ranks); },
          [&] { return stragglerHostsTable(r.stragglers.hosts); },
          [&] { return stragglerCommsTable(r.stragglers.comms); },
          [&] { return linksTable(r.stragglers.links); },
          [&] { return heatmapTable(r.stragglers.heatmap); },
          [&] { return mismatchesTable(r.mismatches); }};
}

}  // namespace

bool writeCsv(const Report& report, const std::string& dir, std::ostream& err) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    err << "commtrace: " << dir << ": cannot create the CSV directory: " << ec.message() << '\n';
    return false;
  }
  for (const auto& build : tableBuilders(report)) {
    const CsvTable t = build();
    const std::string path = (std::filesystem::path(dir) / t.file).string();
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    writeRow(t.header, out);
    for (const Row& row : t.rows) writeRow(row, out);
    out.close();
    if (!out) {
      err << "commtrace: " << path << ": cannot write it\n";
      return false;
    }
  }
  return true;
}

}  // namespace commtrace::report
