#include "tools/report/output/json_report.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "tools/report/format.h"

namespace commtrace::report {
namespace {

using Json = nlohmann::ordered_json;

// Ids are 64-bit hashes: a hex string survives every JSON parser (doubles do not).
Json commId(uint64_t id) { return id == 0 ? Json(nullptr) : Json(fmt::hexId(id)); }

Json utcOrNull(uint64_t realtime_ns) { return realtime_ns == 0 ? Json(nullptr) : Json(fmt::isoTime(realtime_ns)); }

// null without --from/--to; an open end is null.
Json windowJson(const RunSummary& s) {
  if (!s.windowed) return nullptr;
  return {{"from_utc", utcOrNull(s.window_from_utc_ns)},
          {"to_utc", s.window_to_utc_ns == UINT64_MAX ? Json(nullptr) : utcOrNull(s.window_to_utc_ns)},
          {"ops_outside", s.ops_outside_window}};
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
          {"missing_ranks", s.missing_ranks},
          {"first_op_utc", utcOrNull(s.first_op_utc_ns)},
          {"last_op_utc", utcOrNull(s.last_op_utc_ns)},
          {"all_files_reach_utc", utcOrNull(s.all_files_reach_utc_ns)},
          {"window", windowJson(s)},
          {"problems", s.problems}};
}

Json clocksJson(const ClockSummary& c) {
  Json fits = Json::array();
  for (const ClockFit& f : c.fits)
    fits.push_back({{"rank", f.rank},
                    {"host", f.host},
                    {"aligned", f.aligned},
                    {"offset_us", f.offset_us},
                    {"drift_ppm", f.drift_ppm},
                    {"residual_us", f.residual_us},
                    {"anchors", f.anchors},
                    {"outliers", f.outliers},
                    {"drift_fitted", f.drift_fitted}});
  return {{"residual_us_p50", c.residual_us_p50}, {"residual_us_max", c.residual_us_max}, {"cpu_gpu_mapped", c.cpu_gpu_mapped}, {"fits", fits}};
}

Json communicatorJson(const CommunicatorRow& c) {
  return {{"id", commId(c.id)}, {"name", c.name}, {"size", c.size}, {"ranks", c.ranks}, {"hosts", c.hosts}, {"instances", c.instances}};
}

// A figure that could not be measured is null, never 0.
Json orNull(bool known, double value) { return known ? Json(value) : Json(nullptr); }

Json bandwidthRowJson(const BandwidthRow& b) {
  const bool timed = b.timed > 0, has_bw = b.no_bandwidth.empty();
  return {{"comm", commId(b.comm)},
          {"comm_name", b.comm_name},
          {"func", b.func},
          {"bytes", b.bytes},
          {"bucket", b.bucket},
          {"algo", b.algo},
          {"proto", b.proto},
          {"count", b.count},
          {"timed", b.timed},
          {"time_us_p50", orNull(timed, b.time_us_p50)},
          {"time_us_p90", orNull(timed, b.time_us_p90)},
          {"algbw_gbs_p50", orNull(has_bw, b.algbw_gbs_p50)},
          {"busbw_gbs_p50", orNull(has_bw, b.busbw_gbs_p50)},
          {"percentile_error", b.percentile_error},
          {"no_bandwidth", has_bw ? Json(nullptr) : Json(b.no_bandwidth)}};
}

Json bandwidthSeriesRowJson(const BandwidthSeriesRow& r) {
  Json busbw = Json::array();
  for (double v : r.busbw_gbs) busbw.push_back(orNull(v >= 0, v));
  return {{"comm", commId(r.comm)}, {"comm_name", r.comm_name}, {"func", r.func}, {"ops", r.ops}, {"busbw_gbs", busbw}};
}

Json matrixSliceJson(const MatrixSlice& s) {
  Json cells = Json::array();
  for (const MatrixCell& c : s.cells)
    cells.push_back({{"src", c.src},
                     {"dst", c.dst},
                     {"bytes", c.bytes},
                     {"p2p_bytes", c.p2p_bytes},
                     {"time_us", c.time_us},
                     {"gbs", orNull(c.time_us > 0, c.gbs)},
                     {"measured", c.measured}});
  return {{"label", s.label}, {"comm", commId(s.comm)}, {"func", s.func.empty() ? Json(nullptr) : Json(s.func)}, {"cells", cells}};
}

// Without compute records only the communication time is known: the other fields are left
// out rather than printed as zeros.
template <class Row>
Json overlapFields(const Row& row, bool available) {
  Json out = Json::object();
  if (available || row.comm_us > 0) out["comm_us"] = row.comm_us;
  if (!available) return out;
  out["overlapped_us"] = row.overlapped_us;
  out["exposed_us"] = row.exposed_us;
  out["idle_us"] = row.idle_us;
  out["compute_only_us"] = row.compute_only_us;
  return out;
}

Json overlapRowJson(const OverlapRow& o) {
  Json row = {{"rank", o.rank}, {"available", o.available}};
  if (!o.available) row["reason"] = o.reason;
  row.update(overlapFields(o, o.available));
  if (o.available) row["overlap_pct"] = o.overlap_pct;
  row["step_source"] = o.step_source;
  row["step_count"] = o.step_count;
  row["out_of_order"] = o.out_of_order;
  if (o.clock_kernels != 0) {
    row["kernel_clock"] = {{"nccl_kernels", o.clock_kernels}, {"matched", o.clock_matched},
                           {"residual_rms_us", o.clock_residual_us}};
  }
  Json steps = Json::array();
  for (const StepOverlap& s : o.steps) {
    Json step = {{"step", s.step}, {"start_us", s.start_us}};
    if (s.last_step != s.step) step["last_step"] = s.last_step;
    step.update(overlapFields(s, o.available));
    steps.push_back(step);
  }
  row["steps"] = steps;
  return row;
}

Json peerWaitJson(const PeerWaitRow& w) {
  Json row = {{"rank", w.rank}, {"peer", w.peer}, {"transfers", w.transfers}, {"waited", w.waited}, {"wait_us", w.wait_us},
              {"steps", w.steps}};
  if (w.steps > 0) row["wait_per_step_us"] = w.wait_per_step_us;
  if (w.step_share_pct > 0) row["step_share_pct"] = w.step_share_pct;
  return row;
}

Json kernelsJson(const KernelBreakdown& k) {
  const auto rows = [](const std::vector<KernelRow>& list) {
    Json out = Json::array();
    for (const KernelRow& r : list)
      out.push_back({{"rank", r.rank}, {"name", r.name}, {"type", r.type}, {"ranks", r.ranks}, {"count", r.count},
                     {"total_us", r.total_us}, {"avg_us", r.avg_us}, {"max_us", r.max_us}, {"share_pct", r.share_pct}});
    return out;
  };
  Json types = Json::array();
  for (const KernelTypeRow& t : k.types)
    types.push_back({{"rank", t.rank}, {"computation_us", t.computation_us}, {"communication_us", t.communication_us},
                     {"memory_us", t.memory_us}});
  return {{"top", rows(k.top)}, {"per_rank", rows(k.per_rank)}, {"per_rank_by_count", rows(k.per_rank_by_count)}, {"types", types}};
}

Json cudaSyncStats(const CudaSyncStats& s) {
  return {{"count", s.count}, {"failed", s.failed}, {"total_us", s.total_us}, {"p50_us", s.p50_us}, {"max_us", s.max_us}};
}

Json cudaSyncRowJson(const CudaSyncRow& r) {
  Json calls = Json::array();
  for (const CudaSyncCallRow& c : r.calls) {
    Json streams = Json::array();
    for (const CudaSyncStreamRow& s : c.streams) {
      Json stream = {{"stream", fmt::hexId(s.stream)}};
      stream.update(cudaSyncStats(s.stats));
      streams.push_back(stream);
    }
    Json call = {{"call", c.call}};
    call.update(cudaSyncStats(c.stats));
    call["streams"] = streams;
    calls.push_back(call);
  }
  return {{"rank", r.rank}, {"host", r.host}, {"blocked_us", r.blocked_us}, {"calls", calls}};
}

Json stragglerJson(const StragglerRow& s) {
  return {{"rank", s.rank},
          {"host", s.host},
          {"instances", s.instances},
          {"wait_caused_us", s.wait_caused_us},
          {"late_fraction", s.late_fraction},
          {"mean_lateness_us", s.mean_lateness_us},
          {"class", s.cls},
          {"confidence", s.confidence},
          {"flagged", s.flagged},
          {"evidence", s.evidence}};
}

Json stragglerHostJson(const HostStragglerRow& h) {
  return {{"host", h.host}, {"ranks", h.ranks}, {"wait_caused_us", h.wait_caused_us}, {"late_fraction", h.late_fraction}};
}

Json stragglerCommJson(const CommStragglerRow& c) {
  return {{"comm", commId(c.comm)},
          {"comm_name", c.comm_name},
          {"worst_rank", c.worst_rank},
          {"wait_caused_us", c.wait_caused_us},
          {"total_wait_us", c.total_wait_us},
          {"instances", c.instances}};
}

Json linkJson(const SlowLinkRow& l) {
  return {{"a", l.a},
          {"b", l.b},
          {"hosts", l.hosts},
          {"inter_host", l.inter_host},
          {"achieved_gbs", l.achieved_gbs},
          {"peer_median_gbs", l.peer_median_gbs},
          {"ops", l.ops},
          {"confidence", l.confidence},
          {"flagged", l.flagged},
          {"evidence", l.evidence}};
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

Json mismatchJson(const MismatchRow& m) {
  return {{"comm", commId(m.comm)},
          {"comm_name", m.comm_name},
          {"func", m.func},
          {"seq", m.seq},
          {"kind", m.kind},
          {"missing_ranks", m.missing_ranks},
          {"comm_ranks", m.comm_ranks},
          {"detail", m.detail}};
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
  std::vector<StragglerRow> stragglers = r.stragglers.ranks;
  std::stable_sort(stragglers.begin(), stragglers.end(),
                   [](const StragglerRow& a, const StragglerRow& b) { return a.wait_caused_us > b.wait_caused_us; });
  const auto self = [](const auto& value) { return Json(value); };
  PrettyObject doc(out, 0);
  doc.field("schema", kReportSchema);
  doc.field("generator", std::string("commtrace ") + COMMTRACE_VERSION);
  doc.field("run", runJson(r.run));
  doc.field("findings", r.findings);
  doc.field("clocks", clocksJson(r.clocks));
  doc.array("communicators", r.communicators, communicatorJson);
  doc.array("bandwidth", r.bandwidth, bandwidthRowJson);
  doc.object("bandwidth_series", [&](PrettyObject& s) {
    const bool aligned = !r.bandwidth_series.rows.empty();
    s.field("axis", r.bandwidth_series.axis);
    s.field("start_us", orNull(aligned, r.bandwidth_series.start_us));
    s.field("bin_us", orNull(aligned, r.bandwidth_series.bin_us));
    s.array("series", r.bandwidth_series.rows, bandwidthSeriesRowJson);
  });
  doc.object("matrix", [&](PrettyObject& m) {
    m.field("ranks", r.matrix.ranks);
    m.array("bytes", r.matrix.bytes, self);
    m.array("p2p_bytes", r.matrix.p2p_bytes, self);
    m.array("time_us", r.matrix.time_us, self);
    m.field("model", r.matrix.model);
    m.array("slices", r.matrix.slices, matrixSliceJson);
  });
  doc.array("overlap", r.overlap, overlapRowJson);
  doc.array("peer_waits", r.peer_waits, peerWaitJson);
  doc.field("kernels", kernelsJson(r.kernels));
  doc.array("cuda_sync", r.cuda_sync, cudaSyncRowJson);
  doc.array("stragglers", stragglers, stragglerJson);
  doc.array("straggler_hosts", r.stragglers.hosts, stragglerHostJson);
  doc.array("straggler_comms", r.stragglers.comms, stragglerCommJson);
  doc.array("links", r.stragglers.links, linkJson);
  doc.field("lateness_heatmap", heatmapJson(r.stragglers.heatmap));
  doc.array("mismatches", r.mismatches, mismatchJson);
  doc.field("mismatches_total", r.mismatches_total);
  doc.close();
  out << '\n';
}

}  // namespace commtrace::report
