#include "tools/report/output/html_report.h"

#include <cmath>
#include <map>
#include <sstream>

#include "tools/report/evidence_words.h"
#include "tools/report/format.h"
#include "tools/report/output/report_tables.h"
#include "tools/report/output/svg_charts.h"

namespace commtrace::report {
namespace {

using svg::escape;

constexpr const char* kStyle = R"(
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1200px; padding: 0 1em; color: #222; }
h1 { font-size: 1.6em; margin-bottom: 0; } h2 { margin-top: 2em; border-bottom: 1px solid #ccc; }
.dir { color: #666; font-family: monospace; margin-top: 0.2em; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 13px; }
th, td { padding: 3px 9px; border-bottom: 1px solid #e4e4e4; text-align: left; vertical-align: top; }
th { background: #f3f3f3; } td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.findings li { margin: 0.3em 0; } .note { color: #555; }
svg.chart { display: block; margin: 0.5em 0; } svg .tick { font-size: 10px; fill: #444; }
svg .axis { font-size: 12px; fill: #222; } svg .title { font-size: 13px; font-weight: 600; }
svg .frame { fill: none; stroke: #999; } svg .grid { stroke: #eee; }
nav.toc { background: #f7f7f7; border: 1px solid #e4e4e4; padding: 0.4em 1em; margin: 1em 0; display: inline-block; }
nav.toc ol { margin: 0.3em 0; padding-left: 1.5em; columns: 2; column-gap: 3em; }
a.anchor { color: #bbb; text-decoration: none; font-size: 0.7em; } h2:hover a.anchor { color: #06c; }
)";

// The page's body, and its sections for the table of contents: every h2 gets a stable id
// (no counts in it), so a link to #stragglers keeps working from one run to the next.
class Page {
 public:
  std::ostream& section(const std::string& id, const std::string& title) {
    toc_.emplace_back(id, title);
    body_ << "<h2 id=\"" << id << "\">" << escape(title) << " <a class=\"anchor\" href=\"#" << id << "\">#</a></h2>\n";
    return body_;
  }
  std::ostream& body() { return body_; }

  void write(std::ostream& out) const {
    out << "<nav class=\"toc\"><b>Contents</b><ol>\n";
    for (const auto& [id, title] : toc_) out << "<li><a href=\"#" << id << "\">" << escape(title) << "</a></li>\n";
    out << "</ol></nav>\n" << body_.str();
  }

 private:
  std::ostringstream body_;
  std::vector<std::pair<std::string, std::string>> toc_;  // id, title
};

void writeTable(const Table& t, std::ostream& out) {
  if (t.rows.empty()) return void(out << "<p class=\"note\">none</p>\n");
  auto cls = [&](size_t c) { return t.columns[c].align == Table::Align::kRight ? " class=\"num\"" : ""; };
  out << "<table><thead><tr>";
  for (size_t c = 0; c < t.columns.size(); ++c) out << "<th" << cls(c) << '>' << escape(t.columns[c].header) << "</th>";
  out << "</tr></thead><tbody>\n";
  for (const auto& row : t.rows) {
    out << "<tr>";
    for (size_t c = 0; c < t.columns.size(); ++c) out << "<td" << cls(c) << '>' << escape(c < row.size() ? row[c] : "") << "</td>";
    out << "</tr>\n";
  }
  out << "</tbody></table>\n";
}

void writeNotes(const std::vector<std::string>& notes, std::ostream& out) {
  for (const std::string& n : notes) out << "<p class=\"note\">" << escape(n) << "</p>\n";
}

void writeSummary(const Report& r, Page& page) {
  std::ostream& out = page.section("findings", "Findings");
  out << "<ol class=\"findings\">\n";
  for (const std::string& f : r.findings) out << "<li>" << escape(f) << "</li>\n";
  out << "</ol>\n";
  if (r.findings.empty()) out << "<p>None: no straggler, slow link, exposed communication or bandwidth outlier stood out.</p>\n";
  // What to do comes right after what was found, not after the kernel tables.
  page.section("advice", "Advice");
  writeTable(tables::advice(r.advice), out);
  page.section("run", "Run") << "<table>\n";
  for (const auto& [key, value] : tables::runFields(r)) out << "<tr><th>" << escape(key) << "</th><td>" << escape(value) << "</td></tr>\n";
  out << "</table>\n";
  if (!r.run.problems.empty()) out << "<p>Problems:</p>\n<ul>\n";
  for (const std::string& p : r.run.problems) out << "<li><code>" << escape(p) << "</code></li>\n";
  if (!r.run.problems.empty()) out << "</ul>\n";
}

// A column's start after the timeline's: "0", then "+2.5 ms" (the first read "+0 ns").
std::string offsetLabel(double us) { return us == 0 ? std::string("0") : "+" + fmt::duration(us); }

std::vector<std::string> numberedLabels(size_t n, const std::function<std::string(size_t)>& label) {
  std::vector<std::string> out;
  for (size_t i = 0; i < n; ++i) out.push_back(label(i));
  return out;
}

// At most kMaxMatrixCells rows and columns: past that many ranks, consecutive ranks are drawn
// as one cell with their bytes summed (a 1,024-rank run's cell per rank pair made a 135 MB page).
constexpr size_t kMaxMatrixCells = 128;

// From the whole-run slice's sparse cells: a run of any size, without a dense grid.
void writeMatrix(const CommMatrix& m, Page& page) {
  std::ostream& out = page.section("matrix", "Communication matrix");
  const auto ranks = static_cast<size_t>(m.ranks);
  const size_t group = std::max<size_t>(1, (ranks + kMaxMatrixCells - 1) / kMaxMatrixCells);
  out << "<p class=\"note\">Bytes sent from the row's rank" << (group > 1 ? "s" : "") << " to the column's over the whole run"
      << (group > 1 ? ", " + std::to_string(group) + " consecutive ranks to a cell (the JSON and CSV have every pair)" : std::string())
      << ". " << escape(m.model) << "</p>\n";
  svg::Heatmap h{.row_axis = "sender rank", .col_axis = "receiver rank", .log_scale = true,
                 .format = [](double v) { return fmt::bytes(static_cast<uint64_t>(v)); }};
  const size_t cells = (ranks + group - 1) / group;
  h.values.assign(cells, std::vector<double>(cells, 0.0));
  for (const MatrixSlice& slice : m.slices)
    if (slice.label == "all")
      for (const MatrixCell& c : slice.cells) h.values[static_cast<size_t>(c.src) / group][static_cast<size_t>(c.dst) / group] += static_cast<double>(c.bytes);
  h.row_labels = h.col_labels = numberedLabels(cells, [&](size_t i) {
    const size_t first = i * group, last = std::min(ranks, first + group) - 1;
    return first == last ? std::to_string(first) : std::to_string(first) + "-" + std::to_string(last);
  });
  out << svg::heatmap(h);
}

void writeLateness(const LatenessHeatmap& lh, Page& page) {
  const bool by_time = lh.axis != "op order";
  std::ostream& out = page.section("lateness", "Lateness over time");
  out << "<p class=\"note\">Mean lateness of each rank (its arrival after the first member's) per "
      << (by_time ? escape(fmt::duration(lh.bin_us)) + " of the aligned timeline"
                  : escape(fmt::fixed(lh.bin_ops, 0)) + " ops of each communicator (the clocks could not be aligned)")
      << "; grey: no collective of that rank in the bin.</p>\n";
  svg::Heatmap h{.row_axis = "rank", .col_axis = by_time ? "time" : "ops from", .format = [](double v) { return fmt::duration(v); }};
  for (const std::vector<double>& row : lh.mean_lateness_us) {
    h.values.emplace_back();
    for (double v : row) h.values.back().push_back(v >= 0 ? v : NAN);  // -1: no instance in the bin
  }
  h.row_labels = numberedLabels(lh.ranks.size(), [&](size_t i) { return std::to_string(lh.ranks[i]); });
  const size_t bins = lh.mean_lateness_us.empty() ? 0 : lh.mean_lateness_us[0].size();
  h.col_labels = numberedLabels(bins, [&](size_t b) {
    const double bin = static_cast<double>(b);
    return by_time ? offsetLabel(lh.bin_us * bin) : fmt::fixed(lh.bin_ops * bin, 0);
  });
  out << svg::heatmap(h);
}

// busBw of each (communicator, func) per column of the aligned timeline: when one got slow.
void writeBandwidthSeries(const BandwidthSeries& s, Page& page) {
  std::ostream& out = page.section("bandwidth-series", "Bandwidth over time");
  if (s.rows.empty()) {
    out << "<p class=\"note\">No series: no process's clock could be aligned, or no collective had a size and a time.</p>\n";
    return;
  }
  out << "<p class=\"note\">busBw of each communicator and func per " << escape(fmt::duration(s.bin_us))
      << " of the aligned timeline (its bus bytes over its transfer time); grey: no op of it ended in the column.</p>\n";
  svg::Heatmap h{.row_axis = "comm/func", .col_axis = "time", .format = [](double v) { return fmt::gbs(v); }};
  for (const BandwidthSeriesRow& row : s.rows) {
    h.row_labels.push_back(fmt::commLabel(row.comm, row.comm_name) + " " + row.func);
    h.values.emplace_back();
    for (double v : row.busbw_gbs) h.values.back().push_back(v >= 0 ? v : NAN);
  }
  h.col_labels = numberedLabels(s.rows.front().busbw_gbs.size(),
                                [&](size_t b) { return offsetLabel(s.bin_us * static_cast<double>(b)); });
  out << svg::heatmap(h);
}

// One plot per func: busBw against the nccl-tests message size, one series per communicator.
void writeBandwidthPlots(const std::vector<BandwidthRow>& rows, Page& page) {
  std::ostream& out = page.section("bandwidth-plots", "Bandwidth by message size");
  std::map<std::string, std::map<std::string, svg::Series>> by_func;
  for (const BandwidthRow& b : rows) {
    if (!b.no_bandwidth.empty()) continue;
    const std::string comm = fmt::commLabel(b.comm, b.comm_name);
    svg::Series& se = by_func[b.func][comm];
    se.name = comm;
    se.x.push_back(static_cast<double>(b.bytes));
    se.y.push_back(b.busbw_gbs_p50);
    se.tooltips.push_back(fmt::bytes(b.bytes) + ' ' + b.algo + '/' + b.proto + ", " + std::to_string(b.count) + " instances, busBw " +
                          fmt::gbs(b.busbw_gbs_p50) + ", p50 " + fmt::duration(b.time_us_p50));
  }
  if (by_func.empty()) out << "<p class=\"note\">No op had a bandwidth.</p>\n";
  for (auto& [func, series] : by_func) {
    svg::ScatterPlot plot{.title = func, .x_axis = "message size (nccl-tests S)", .y_axis = "busBw GB/s",
                          .x_tick = [](double x) { return fmt::bytes(static_cast<uint64_t>(std::llround(x))); }};
    for (auto& [comm, se] : series) plot.series.push_back(std::move(se));
    out << svg::scatterLogX(plot);
  }
}

// Exposed communication over the run: each rank with compute records a row, its steps in up
// to kColumns columns of consecutive step numbers, a cell the mean exposed time per step (a
// stretch of steps counts whole in the column of its first step).
void writeExposedPerStep(const std::vector<OverlapRow>& rows, std::ostream& out) {
  constexpr int kColumns = 100;
  int steps = 0;
  for (const OverlapRow& o : rows)
    if (o.available) steps = std::max(steps, o.step_count);
  if (steps < 2) return;
  const int per_column = (steps + kColumns - 1) / kColumns;
  const size_t columns = static_cast<size_t>((steps + per_column - 1) / per_column);
  svg::Heatmap h{.row_axis = "rank", .col_axis = per_column == 1 ? "step" : "steps from", .format = [](double v) { return fmt::duration(v); }};
  for (const OverlapRow& o : rows) {
    if (!o.available || o.steps.empty()) continue;
    std::vector<double> exposed(columns, 0), counted(columns, 0);
    for (const StepOverlap& st : o.steps) {
      const size_t c = std::min(columns - 1, static_cast<size_t>(st.step / per_column));
      exposed[c] += st.exposed_us;
      counted[c] += st.last_step - st.step + 1;
    }
    h.row_labels.push_back(std::to_string(o.rank));
    h.values.emplace_back();
    for (size_t c = 0; c < columns; ++c) h.values.back().push_back(counted[c] > 0 ? exposed[c] / counted[c] : NAN);
  }
  h.col_labels = numberedLabels(columns, [&](size_t c) { return std::to_string(c * static_cast<size_t>(per_column)); });
  out << "<p class=\"note\">Exposed communication per step of each rank"
      << (per_column > 1 ? " (mean over " + std::to_string(per_column) + " steps a column)" : std::string()) << "; grey: no step there.</p>\n";
  out << svg::heatmap(h);
}

// Where each rank's GPU time went (whole run), the same per step for the rank with the most
// exposed communication, and that rank's worst step as a timeline strip.
void writeOverlapCharts(const std::vector<OverlapRow>& rows, std::ostream& out) {
  constexpr size_t kMaxSteps = 60;
  const std::vector<std::string> kSegments = {"communication under compute", "exposed communication", "compute alone", "GPU idle"};
  const auto us = [](double v) { return fmt::duration(v); };
  svg::StackedBars ranks{.title = "GPU time per rank, from its first to its last communication kernel", .segment_names = kSegments, .format = us};
  const OverlapRow* worst = nullptr;
  for (const OverlapRow& o : rows) {
    if (!o.available) continue;
    ranks.row_labels.push_back("rank " + std::to_string(o.rank));
    ranks.values.push_back({o.overlapped_us, o.exposed_us, o.compute_only_us, o.idle_us});
    if (worst == nullptr || o.exposed_us > worst->exposed_us) worst = &o;
  }
  if (worst == nullptr) return;
  out << svg::stackedBars(ranks);
  writeExposedPerStep(rows, out);
  svg::StackedBars steps{.title = "rank " + std::to_string(worst->rank) + " (most exposed communication), per step",
                         .segment_names = kSegments, .format = us};
  for (size_t i = 0; i < worst->steps.size() && i < kMaxSteps; ++i) {
    const StepOverlap& st = worst->steps[i];
    steps.row_labels.push_back(st.last_step == st.step ? "step " + std::to_string(st.step)
                                                       : "steps " + std::to_string(st.step) + "-" + std::to_string(st.last_step));
    steps.values.push_back({st.overlapped_us, st.exposed_us, st.compute_only_us, st.idle_us});
  }
  if (!steps.values.empty()) out << svg::stackedBars(steps);
  if (worst->steps.size() > kMaxSteps) {
    writeNotes({"first " + std::to_string(kMaxSteps) + " rows of " + std::to_string(worst->steps.size()) + " (" +
                std::to_string(worst->step_count) + " steps)"},
               out);
  }
  const StepTimeline& t = worst->most_exposed_step;
  if (t.step < 0) return;
  out << svg::timelineStrip({.title = "rank " + std::to_string(worst->rank) + ", step " + std::to_string(t.step) + " (its most exposed)",
                             .start = t.start_us, .end = t.end_us, .lane_names = {"communication", "compute"},
                             .lanes = {t.comm, t.compute}, .format = us,
                             .lane_segments = {1, 2}});  // the bars' "exposed communication" and "compute alone" colours
}

void writeTables(const Report& r, Page& page) {
  std::ostream& out = page.section("bandwidth", "Bandwidth");
  writeTable(tables::bandwidth(r.bandwidth), out);
  for (const std::string& note : tables::bandwidthNotes(r.bandwidth)) writeNotes({note}, out);
  page.section("stragglers", "Stragglers");
  writeTable(tables::stragglers(r.stragglers.ranks), out);
  for (const StragglerRow& s : r.stragglers.ranks)
    if (s.flagged) writeNotes({"rank " + std::to_string(s.rank) + ": " + evidenceWords(s)}, out);
  if (!r.stragglers.ranks.empty()) writeNotes({tables::stragglerConfidenceNote()}, out);
  out << "<h3>By host</h3>\n";
  writeTable(tables::stragglerHosts(r.stragglers.hosts), out);
  out << "<h3>By communicator</h3>\n";
  writeTable(tables::stragglerComms(r.stragglers.comms), out);
  page.section("links", "Links");
  writeTable(tables::links(r.stragglers.links), out);
  for (const SlowLinkRow& l : r.stragglers.links)
    if (l.flagged) writeNotes({std::to_string(l.a) + " <-> " + std::to_string(l.b) + ": " + evidenceWords(l)}, out);
  if (!r.stragglers.links.empty()) writeNotes({tables::linkConfidenceNote()}, out);
  page.section("overlap", "Overlap");
  writeTable(tables::overlap(r.overlap), out);
  for (const std::string& reason : tables::unavailableReasons(r.overlap)) writeNotes({"- = not measured: " + reason}, out);
  if (const std::string note = tables::kernelClockNote(r.overlap); !note.empty()) writeNotes({note}, out);
  if (const std::string note = tables::outOfOrderNote(r.overlap); !note.empty()) writeNotes({note}, out);
  writeOverlapCharts(r.overlap, out);
  page.section("peer-waits", "Point-to-point waits (pipeline bubbles)");
  writeTable(tables::peerWaits(r.peer_waits), out);
  page.section("kernels", "GPU kernels");
  out << "<h3>Kernels by GPU time, all ranks</h3>\n";
  writeTable(tables::kernels(r.kernels.top), out);
  out << "<h3>By type (communication, memory, computation)</h3>\n";
  writeTable(tables::kernelTypes(r.kernels.types), out);
  out << "<h3>Per rank: its kernels by GPU time</h3>\n";
  writeTable(tables::kernels(r.kernels.per_rank), out);
  out << "<h3>Per rank: its kernels by number of launches</h3>\n";
  writeTable(tables::kernels(r.kernels.per_rank_by_count), out);
  page.section("cuda-sync", "CPU blocked in CUDA synchronisation");
  writeTable(tables::cudaSync(r.cuda_sync), out);
  page.section("mismatches", "Mismatches and hangs (" + std::to_string(r.mismatches_total) + ")");
  writeTable(tables::mismatches(r.mismatches), out);
  page.section("communicators", "Communicators");
  writeTable(tables::communicators(r.communicators), out);
  page.section("parallelism", "Parallelism");
  writeTable(tables::parallelism(r.parallelism), out);
  page.section("clocks", "Clocks") << "<p class=\"note\">" << escape(tables::clockLine(r.clocks)) << "</p>\n";
  writeTable(tables::clocks(r.clocks), out);
}

}  // namespace

void writeHtml(const Report& r, std::ostream& out) {
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>commtrace report: " << escape(r.run.dir)
      << "</title>\n<style>" << kStyle << "</style>\n</head>\n<body>\n<h1>commtrace report</h1>\n<p class=\"dir\">" << escape(r.run.dir) << "</p>\n";
  Page page;
  writeSummary(r, page);
  writeMatrix(r.matrix, page);
  writeLateness(r.stragglers.heatmap, page);
  writeBandwidthPlots(r.bandwidth, page);
  writeBandwidthSeries(r.bandwidth_series, page);
  writeTables(r, page);
  page.write(out);
  out << "</body>\n</html>\n";
}

}  // namespace commtrace::report
