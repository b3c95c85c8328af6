#include "tools/report/output/json_parts.h"

#include <algorithm>

#include "tools/report/format.h"
#include "tools/report/output/row_bounds.h"

namespace commtrace::report::json {
namespace {

// Ids are 64-bit hashes: a hex string survives every JSON parser (doubles do not).
Json commId(uint64_t id) { return id == 0 ? Json(nullptr) : Json(fmt::hexId(id)); }

Json utcOrNull(uint64_t realtime_ns) { return realtime_ns == 0 ? Json(nullptr) : Json(fmt::isoTime(realtime_ns)); }

// null without --from/--to; an open end is null.
Json windowJson(const RunSummary& s) {
  if (!s.windowed) return nullptr;
  const auto step = [](int64_t n) { return n < 0 ? Json(nullptr) : Json(n); };
  return {{"from_utc", utcOrNull(s.window_from_utc_ns)},
          {"to_utc", s.window_to_utc_ns == UINT64_MAX ? Json(nullptr) : utcOrNull(s.window_to_utc_ns)},
          {"ops_outside", s.ops_outside_window},
          {"from_step", step(s.window_from_step)},
          {"to_step", step(s.window_to_step)},
          {"step_rank", step(s.window_step_rank)},
          {"step_period_ops", s.window_step_rank < 0 || s.window_step_period == 0 ? Json(nullptr) : Json(s.window_step_period)},
          {"step_range", s.window_step_range.empty() ? Json(nullptr) : Json(s.window_step_range)}};
}

constexpr size_t kShortString = 80;  // longer, a sentence: its row takes a member a line

// Host and communicator names come from the files: bytes that are not UTF-8 become U+FFFD.
void writeScalar(std::ostream& out, const Json& value) { out << value.dump(-1, ' ', false, Json::error_handler_t::replace); }

bool isSmall(const Json& v) {
  return !(v.is_structured() && !v.empty()) && !(v.is_string() && v.get_ref<const std::string&>().size() > kShortString);
}

bool isWide(const CommMatrix& matrix) { return matrix.ranks > static_cast<int>(kWideRanks); }

}  // namespace

Json runJson(const RunSummary& s) {
  return {{"dir", s.dir},
          {"jobs", s.jobs},
          {"ranks", s.ranks},
          {"processes", s.processes},
          {"hosts", s.hosts},
          {"communicators", s.communicators},
          {"ops", s.ops},
          {"collective_instances", s.collective_instances},
          {"p2p_transfers", s.p2p_transfers},
          {"dropped_records", s.dropped_records},
          {"untracked_events", s.untracked_events},
          {"files", s.files},
          {"damaged_files", s.damaged_files},
          {"files_being_written", s.files_being_written},
          {"files_left_open", s.files_left_open},
          {"files_left_open_exit_unseen", s.files_left_open_exit_unseen},
          {"files_cut_short", s.files_cut_short},
          {"ranks_left_open", s.ranks_left_open},
          {"left_open_last_written_utc", utcOrNull(s.left_open_last_written_utc_ns)},
          {"missing_ranks", s.missing_ranks},
          {"first_op_utc", utcOrNull(s.first_op_utc_ns)},
          {"last_op_utc", utcOrNull(s.last_op_utc_ns)},
          {"all_files_reach_utc", utcOrNull(s.all_files_reach_utc_ns)},
          {"window", windowJson(s)},
          {"shards", s.shards},
          {"problems", s.problems}};
}

Json valueJson(const rows::Value& value) {
  return std::visit(
      [](const auto& v) {
        if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::monostate>) return Json(nullptr);
        else return Json(v);
      },
      value);
}

Json clocksJson(const ClockSummary& c) {
  return {{"residual_us_p50", c.residual_us_p50},
          {"residual_us_max", c.residual_us_max},
          {"cpu_gpu_mapped", c.cpu_gpu_mapped},
          {"fits", rowsJson(rows::clockFitFields(), c.fits)}};
}

Json bandwidthSeriesRowJson(const BandwidthSeriesRow& r) {
  Json busbw = Json::array();
  for (double v : r.busbw_gbs) busbw.push_back(orNull(v >= 0, v));
  return {{"comm", commId(r.comm)}, {"comm_name", r.comm_name}, {"func", r.func}, {"ops", r.ops}, {"busbw_gbs", busbw}};
}

Json matrixSliceJson(const MatrixSlice& s, size_t max_cells) {
  Json slice = rowJson(rows::matrixSliceFields(), s);
  Json cells = Json::array();
  for (size_t i : bounds::keptRows(s.cells.size(), max_cells, [&](size_t i) { return -static_cast<double>(s.cells[i].bytes); }))
    cells.push_back(rowJson(rows::matrixCellFields(), s.cells[i]));
  slice["cells"] = std::move(cells);
  slice["cells_total"] = s.cells.size();
  return slice;
}

Json overlapRowJson(const OverlapRow& o, bool with_steps) {
  Json row = rowJson(rows::overlapFields(), o);
  if (o.clock_kernels != 0) {
    row["kernel_clock"] = {{"nccl_kernels", o.clock_kernels}, {"matched", o.clock_matched},
                           {"residual_rms_us", o.clock_residual_us}};
  }
  Json steps = Json::array();
  if (with_steps)
    for (const StepOverlap& s : o.steps) steps.push_back(rowJson(rows::overlapStepFields(), rows::OverlapStepRow{o, s}));
  row["steps"] = steps;
  return row;
}

Json kernelsJson(const KernelBreakdown& k) {
  return {{"top", rowsJson(rows::kernelFields(), k.top)},
          {"per_rank", rowsJson(rows::kernelFields(), k.per_rank)},
          {"per_rank_by_count", rowsJson(rows::kernelFields(), k.per_rank_by_count)},
          {"types", rowsJson(rows::kernelTypeFields(), k.types)}};
}

Json cudaSyncRowJson(const CudaSyncRow& r) {
  Json calls = Json::array();
  for (const CudaSyncCallRow& c : r.calls) {
    Json call = rowJson(rows::cudaSyncCallFields(), c);
    call["streams"] = rowsJson(rows::cudaSyncStreamFields(), c.streams);
    calls.push_back(call);
  }
  Json row = rowJson(rows::cudaSyncFields(), r);
  row["calls"] = calls;
  return row;
}

// Bins where a rank had no instance (-1 in the Report) are null.
Json heatmapJson(const LatenessHeatmap& h) {
  const size_t group = bounds::groupOf(h.ranks.size(), kWideRanks);
  Json grid = Json::array();
  for (const std::vector<double>& row : bounds::groupedMax(h.mean_lateness_us, group, [](double v) { return v < 0; })) {
    Json cells = Json::array();
    for (double v : row) cells.push_back(orNull(v >= 0, v));
    grid.push_back(std::move(cells));
  }
  Json first_ranks = Json::array();
  for (size_t r = 0; r < h.ranks.size(); r += group) first_ranks.push_back(h.ranks[r]);
  const bool by_time = h.axis != "op order";
  return {{"axis", h.axis},
          {"ranks", first_ranks},
          {"ranks_per_row", group},
          {"start_us", orNull(by_time, h.start_us)},
          {"bin_us", orNull(by_time, h.bin_us)},
          {"bin_ops", orNull(!by_time, h.bin_ops)},
          {"mean_lateness_us", grid}};
}

std::vector<bool> overlapWithSteps(const std::vector<OverlapRow>& overlap) {
  std::vector<bool> kept(overlap.size(), overlap.size() <= kWideRanks);
  if (overlap.size() <= kWideRanks) return kept;
  const bool exposure_known = std::any_of(overlap.begin(), overlap.end(), [](const OverlapRow& o) { return o.available; });
  for (size_t i : bounds::keptRows(overlap.size(), kWideKept, [&](size_t i) { return exposure_known ? -overlap[i].exposed_us : -overlap[i].comm_us; }))
    kept[i] = true;
  return kept;
}

size_t keptCells(const CommMatrix& matrix) { return isWide(matrix) ? kWideRanks : SIZE_MAX; }

std::vector<const MatrixSlice*> keptSlices(const CommMatrix& matrix) {
  std::vector<bool> kept(matrix.slices.size(), true);
  if (isWide(matrix)) {
    std::vector<size_t> per_comm;
    for (size_t i = 0; i < matrix.slices.size(); ++i)
      if (matrix.slices[i].comm != 0) per_comm.push_back(i), kept[i] = false;
    const auto bytesOf = [&](size_t i) {
      double sum = 0;
      for (const MatrixCell& c : matrix.slices[per_comm[i]].cells) sum += static_cast<double>(c.bytes);
      return -sum;
    };
    for (size_t i : bounds::keptRows(per_comm.size(), kWideKept, bytesOf)) kept[per_comm[i]] = true;
  }
  std::vector<const MatrixSlice*> out;
  for (size_t i = 0; i < matrix.slices.size(); ++i)
    if (kept[i]) out.push_back(&matrix.slices[i]);
  return out;
}

void writeLaidOut(std::ostream& out, const Json& value, int depth, bool in_array) {
  if (!value.is_structured() || value.empty()) return writeScalar(out, value);
  const bool one_line = (value.is_array() || in_array) && std::all_of(value.begin(), value.end(), isSmall);
  const std::string indent(static_cast<size_t>(2 * (depth + 1)), ' ');
  out << (value.is_object() ? '{' : '[');
  for (auto it = value.begin(); it != value.end(); ++it) {
    if (it != value.begin()) out << (one_line ? ", " : ",");
    if (!one_line) out << '\n' << indent;
    if (value.is_object()) {
      writeScalar(out, Json(it.key()));
      out << ": ";
    }
    writeLaidOut(out, *it, depth + 1, value.is_array());
  }
  if (!one_line) out << '\n' << std::string(indent.size() - 2, ' ');
  out << (value.is_object() ? '}' : ']');
}

}  // namespace commtrace::report::json
