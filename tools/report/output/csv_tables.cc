#include "tools/report/output/csv_tables.h"

#include "tools/report/format.h"

namespace commtrace::report::csv {
namespace {

std::string commCell(uint64_t id) { return id == 0 ? "" : fmt::hexId(id); }
// A figure that could not be measured is an empty cell, never 0.
std::string numIf(bool known, double v) { return known ? num(v) : ""; }

// RFC 4180: a field holding a comma, quote or line break is quoted, its quotes doubled.
std::string quoted(const std::string& field) {
  if (field.find_first_of(",\"\r\n") == std::string::npos) return field;
  std::string out = "\"";
  for (char c : field) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + '"';
}

std::string utcCell(uint64_t realtime_ns) { return realtime_ns == 0 ? "" : fmt::isoTime(realtime_ns); }

}  // namespace

void writeRow(const Line& row, std::ostream& out) {
  for (size_t i = 0; i < row.size(); ++i) out << (i ? "," : "") << quoted(row[i]);
  out << "\r\n";
}


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
            {"files_being_written", num(s.files_being_written)},
            {"files_left_open", num(s.files_left_open)},
            {"files_left_open_exit_unseen", num(s.files_left_open_exit_unseen)},
            {"files_cut_short", num(s.files_cut_short)},
            {"ranks_left_open", num(s.ranks_left_open)},
            {"left_open_last_written_utc", utcCell(s.left_open_last_written_utc_ns)},
            {"missing_ranks", num(s.missing_ranks)},
            {"first_op_utc", utcCell(s.first_op_utc_ns)},
            {"last_op_utc", utcCell(s.last_op_utc_ns)},
            {"all_files_reach_utc", utcCell(s.all_files_reach_utc_ns)},
            {"window_from_utc", utcCell(s.window_from_utc_ns)},
            {"window_to_utc", s.window_to_utc_ns == UINT64_MAX ? "" : utcCell(s.window_to_utc_ns)},
            {"ops_outside_window", s.windowed ? num(s.ops_outside_window) : ""},
            {"window_from_step", s.window_from_step < 0 ? "" : num(s.window_from_step)},
            {"window_to_step", s.window_to_step < 0 ? "" : num(s.window_to_step)},
            {"window_step_rank", s.window_step_rank < 0 ? "" : num(s.window_step_rank)},
            {"window_step_period_ops", s.window_step_rank < 0 || s.window_step_period == 0 ? "" : num(s.window_step_period)},
            {"window_step_range", s.window_step_range},
            {"shards", num(s.shards)}};
  return t;
}

// One column of text lines: problems.csv.
CsvTable linesTable(std::string file, std::string column, const std::vector<std::string>& lines) {
  CsvTable t{std::move(file), {std::move(column)}, {}};
  for (const std::string& line : lines) t.rows.push_back({line});
  return t;
}

std::vector<rows::OverlapStepRow> stepsOf(const OverlapRow& o) {
  std::vector<rows::OverlapStepRow> steps;
  for (const StepOverlap& s : o.steps) steps.push_back({o, s});
  return steps;
}

// One line per (process, call, stream): the process's rank and the call in front.
CsvTable cudaSyncStreamsTable(const std::vector<CudaSyncRow>& list) {
  const auto rank = rows::pick(rows::cudaSyncFields(), {"rank"});
  const auto call = rows::pick(rows::cudaSyncCallFields(), {"call"});
  CsvTable t{"cuda_sync_streams.csv", rows::csvHeader(rank), {}};
  for (const auto& columns : {rows::csvHeader(call), rows::csvHeader(rows::cudaSyncStreamFields())})
    t.header.insert(t.header.end(), columns.begin(), columns.end());
  for (const CudaSyncRow& r : list)
    for (const CudaSyncCallRow& c : r.calls)
      for (const CudaSyncStreamRow& s : c.streams) {
        Line line = rows::csvCells(rank, r);
        for (const auto& cells : {rows::csvCells(call, c), rows::csvCells(rows::cudaSyncStreamFields(), s)})
          line.insert(line.end(), cells.begin(), cells.end());
        t.rows.push_back(std::move(line));
      }
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

}  // namespace commtrace::report::csv
