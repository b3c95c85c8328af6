#include "tools/report/output/json_report.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "tools/report/format.h"
#include "tools/report/output/report_rows.h"

namespace commtrace::report {
namespace {

using Json = nlohmann::ordered_json;

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

// A row as its declaration (report_rows.h) says: a field its row cannot give is null, or left
// out where the declaration says so.
template <class Row>
Json rowJson(const rows::Fields<Row>& fields, const Row& row) {
  Json out = Json::object();
  for (const rows::Field<Row>& f : fields) {
    const rows::Value v = f.value(row);
    if (f.presence == rows::Presence::kOnlyWhenKnown && std::holds_alternative<std::monostate>(v)) continue;
    out[std::string(f.key)] = valueJson(v);
  }
  return out;
}

// An array of rows, each as its declaration says.
template <class Row>
Json rowsJson(const rows::Fields<Row>& fields, const std::vector<Row>& list) {
  Json out = Json::array();
  for (const Row& row : list) out.push_back(rowJson(fields, row));
  return out;
}

Json clocksJson(const ClockSummary& c) {
  return {{"residual_us_p50", c.residual_us_p50},
          {"residual_us_max", c.residual_us_max},
          {"cpu_gpu_mapped", c.cpu_gpu_mapped},
          {"fits", rowsJson(rows::clockFitFields(), c.fits)}};
}

// A figure that could not be measured is null, never 0.
Json orNull(bool known, double value) { return known ? Json(value) : Json(nullptr); }

Json bandwidthSeriesRowJson(const BandwidthSeriesRow& r) {
  Json busbw = Json::array();
  for (double v : r.busbw_gbs) busbw.push_back(orNull(v >= 0, v));
  return {{"comm", commId(r.comm)}, {"comm_name", r.comm_name}, {"func", r.func}, {"ops", r.ops}, {"busbw_gbs", busbw}};
}

Json matrixSliceJson(const MatrixSlice& s) {
  Json slice = rowJson(rows::matrixSliceFields(), s);
  slice["cells"] = rowsJson(rows::matrixCellFields(), s.cells);
  return slice;
}

Json overlapRowJson(const OverlapRow& o) {
  Json row = rowJson(rows::overlapFields(), o);
  if (o.clock_kernels != 0) {
    row["kernel_clock"] = {{"nccl_kernels", o.clock_kernels}, {"matched", o.clock_matched},
                           {"residual_rms_us", o.clock_residual_us}};
  }
  Json steps = Json::array();
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
  Json grid = Json::array();
  for (const std::vector<double>& row : h.mean_lateness_us) {
    Json cells = Json::array();
    for (double v : row) cells.push_back(orNull(v >= 0, v));
    grid.push_back(std::move(cells));
  }
  const bool by_time = h.axis != "op order";
  return {{"axis", h.axis},
          {"ranks", h.ranks},
          {"start_us", orNull(by_time, h.start_us)},
          {"bin_us", orNull(by_time, h.bin_us)},
          {"bin_ops", orNull(!by_time, h.bin_ops)},
          {"mean_lateness_us", grid}};
}

// Writes a JSON object exactly as nlohmann's dump(2) writes it, one field at a time, and an
// array field one element at a time: only one element is ever held as a document. (The
// report of a 1,024-rank run as one document took some 400 MB to print 100 MB.)
class PrettyObject {
 public:
  PrettyObject(std::ostream& out, int depth) : out_(out), depth_(depth) {}

  void field(std::string_view key, const Json& value) {
    openField(key);
    write(value, depth_ + 1);
  }
  // element(row) -> Json for each of `rows`, in order.
  template <class Rows, class Element>
  void array(std::string_view key, const Rows& rows, Element element) {
    openField(key);
    if (rows.empty()) {
      out_ << "[]";
      return;
    }
    out_ << '[';
    bool first = true;
    for (const auto& row : rows) {
      out_ << (first ? "\n" : ",\n") << indent(depth_ + 2);
      first = false;
      write(element(row), depth_ + 2);
    }
    out_ << '\n' << indent(depth_ + 1) << ']';
  }
  // fill(PrettyObject&) writes the nested object's fields.
  template <class Fill>
  void object(std::string_view key, Fill fill) {
    openField(key);
    PrettyObject inner(out_, depth_ + 1);
    fill(inner);
    inner.close();
  }
  void close() { out_ << (first_ ? "{}" : "\n" + indent(depth_) + "}"); }

 private:
  static std::string indent(int depth) { return std::string(static_cast<size_t>(2 * depth), ' '); }
  void openField(std::string_view key) {
    out_ << (first_ ? "{\n" : ",\n") << indent(depth_ + 1) << '"' << key << "\": ";
    first_ = false;
  }
  // A value dumped at depth 0, its lines shifted to `depth` (JSON strings hold no raw newline).
  void write(const Json& value, int depth) {
    // Host and communicator names come from the files: bytes that are not UTF-8 become U+FFFD.
    const std::string text = value.dump(2, ' ', false, Json::error_handler_t::replace);
    const std::string shift = indent(depth);
    size_t from = 0;
    for (size_t nl; (nl = text.find('\n', from)) != std::string::npos; from = nl + 1)
      out_.write(text.data() + from, static_cast<std::streamsize>(nl + 1 - from)) << shift;
    out_.write(text.data() + from, static_cast<std::streamsize>(text.size() - from));
  }

  std::ostream& out_;
  const int depth_;
  bool first_ = true;
};

}  // namespace

void writeJson(const Report& r, std::ostream& out) {
  const auto self = [](const auto& value) { return Json(value); };
  const auto element = [](const auto& fields) { return [&fields](const auto& row) { return rowJson(fields, row); }; };
  PrettyObject doc(out, 0);
  doc.field("schema", kReportSchema);
  doc.field("generator", std::string("commtrace ") + COMMTRACE_VERSION);
  doc.field("run", runJson(r.run));
  doc.field("findings", r.findings);
  doc.array("finding_details", r.finding_details, element(rows::findingFields()));
  doc.array("advice", r.advice, element(rows::adviceFields()));
  doc.field("clocks", clocksJson(r.clocks));
  doc.array("communicators", r.communicators, element(rows::communicatorFields()));
  doc.array("parallelism", r.parallelism, element(rows::parallelismFields()));
  doc.array("bandwidth", r.bandwidth, element(rows::bandwidthFields()));
  doc.object("bandwidth_series", [&](PrettyObject& s) {
    const bool aligned = !r.bandwidth_series.rows.empty();
    s.field("axis", r.bandwidth_series.axis);
    s.field("start_us", orNull(aligned, r.bandwidth_series.start_us));
    s.field("bin_us", orNull(aligned, r.bandwidth_series.bin_us));
    s.array("series", r.bandwidth_series.rows, bandwidthSeriesRowJson);
  });
  doc.object("matrix", [&](PrettyObject& m) {
    m.field("ranks", r.matrix.ranks);
    if (r.matrix.dense) {
      m.array("bytes", r.matrix.bytes, self);
      m.array("p2p_bytes", r.matrix.p2p_bytes, self);
      m.array("time_us", r.matrix.time_us, self);
    } else {
      for (const char* grid : {"bytes", "p2p_bytes", "time_us"}) m.field(grid, Json(nullptr));
    }
    m.field("model", r.matrix.model);
    m.array("slices", r.matrix.slices, matrixSliceJson);
  });
  doc.array("overlap", r.overlap, overlapRowJson);
  doc.array("peer_waits", r.peer_waits, element(rows::peerWaitFields()));
  doc.field("kernels", kernelsJson(r.kernels));
  doc.array("cuda_sync", r.cuda_sync, cudaSyncRowJson);
  doc.array("stragglers", r.stragglers.ranks, element(rows::stragglerFields()));
  doc.array("straggler_hosts", r.stragglers.hosts, element(rows::hostStragglerFields()));
  doc.array("straggler_comms", r.stragglers.comms, element(rows::commStragglerFields()));
  doc.array("links", r.stragglers.links, element(rows::linkFields()));
  doc.field("lateness_heatmap", heatmapJson(r.stragglers.heatmap));
  doc.array("mismatches", r.mismatches, element(rows::mismatchFields()));
  doc.field("mismatches_total", r.mismatches_total);
  doc.field("collectives_lost_to_drops", r.collectives_lost_to_drops);
  doc.close();
  out << '\n';
}

}  // namespace commtrace::report
