#include "tools/report/output/report_charts.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "tools/report/analyses/call_paths.h"
#include "tools/report/analyses/call_stacks.h"
#include "tools/report/format.h"
#include "tools/report/load/phase_path_tally.h"
#include "tools/report/output/row_bounds.h"
#include "tools/report/output/svg_charts.h"

namespace commtrace::report::charts {
namespace {

using svg::escape;

// A column's start after the timeline's: "0", then "+2.5 ms" (the first read "+0 ns").
std::string offsetLabel(double us) { return us == 0 ? std::string("0") : "+" + fmt::duration(us); }

std::vector<std::string> numberedLabels(size_t n, const std::function<std::string(size_t)>& label) {
  std::vector<std::string> out;
  for (size_t i = 0; i < n; ++i) out.push_back(label(i));
  return out;
}

// At most kMaxRows rows (and matrix columns) a chart: past that many ranks, consecutive ranks
// are drawn as one row or cell (a 1,024-rank run's cell per rank pair made a 135 MB page; a
// 4,096-rank run's lateness, a row per rank, 50 MB).
constexpr size_t kMaxRows = 128;

size_t groupOf(size_t n) { return bounds::groupOf(n, kMaxRows); }

// Consecutive rows as one where there are more than kMaxRows (NaN: no value), labelled
// "first-last". Returns how many rows went into one.
size_t groupRows(svg::Heatmap& h) {
  const size_t rows = h.values.size();
  const size_t group = groupOf(rows);
  if (group == 1) return 1;
  h.values = bounds::groupedMax(h.values, group, [](double v) { return std::isnan(v); });
  std::vector<std::string> labels;
  for (size_t first = 0; first < rows; first += group) {
    const size_t last = std::min(rows, first + group) - 1;
    labels.push_back(first == last ? h.row_labels[first] : h.row_labels[first] + "-" + h.row_labels[last]);
  }
  h.row_labels = std::move(labels);
  return group;
}

std::vector<size_t> keptRows(size_t n, const std::function<double(size_t)>& key) { return bounds::keptRows(n, kMaxRows, key); }

// A series' slowest column as a share of its median column (1 without one): the least got slowest.
double dipOf(const BandwidthSeriesRow& row) {
  std::vector<double> seen;
  for (double v : row.busbw_gbs)
    if (v >= 0) seen.push_back(v);
  if (seen.empty()) return 1.0;
  std::sort(seen.begin(), seen.end());
  const double median = seen[seen.size() / 2];
  return median > 0 ? seen.front() / median : 1.0;
}

// ", each row the largest of N consecutive ranks' (...)" where rows were grouped.
std::string groupedNote(size_t group, const char* what) {
  return group > 1 ? ", each row the largest of " + std::to_string(group) + " consecutive " + what + " (the JSON and CSV have each)" : "";
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
  const size_t group = groupRows(h);
  out << "<p class=\"note\">Exposed communication per step of each rank"
      << (per_column > 1 ? " (mean over " + std::to_string(per_column) + " steps a column)" : std::string()) << groupedNote(group, "ranks'")
      << "; grey: no step there.</p>\n";
  out << svg::heatmap(h);
}

}  // namespace

// From the whole-run slice's sparse cells: a run of any size, without a dense grid.
std::string matrixChart(const CommMatrix& m) {
  std::ostringstream out;
  const auto ranks = static_cast<size_t>(m.ranks);
  const size_t group = groupOf(ranks);
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
  return out.str();
}

std::string latenessChart(const LatenessHeatmap& lh) {
  const bool by_time = lh.axis != "op order";
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
  const size_t group = groupRows(h);
  std::ostringstream out;
  out << "<p class=\"note\">Mean lateness of each rank (its arrival after the first member's) per "
      << (by_time ? escape(fmt::duration(lh.bin_us)) + " of the aligned timeline"
                  : escape(fmt::fixed(lh.bin_ops, 0)) + " ops of each communicator (the clocks could not be aligned)")
      << groupedNote(group, "ranks'") << "; grey: no collective of that rank in the bin.</p>\n";
  out << svg::heatmap(h);
  return out.str();
}

std::string bandwidthSeriesChart(const BandwidthSeries& s) {
  if (s.rows.empty())
    return "<p class=\"note\">No series: no process's clock could be aligned, or no collective had a size and a time.</p>\n";
  const std::vector<size_t> shown = keptRows(s.rows.size(), [&](size_t i) { return dipOf(s.rows[i]); });
  std::ostringstream out;
  out << "<p class=\"note\">busBw of each communicator and func per " << escape(fmt::duration(s.bin_us))
      << " of the aligned timeline (its bus bytes over its transfer time)";
  if (shown.size() < s.rows.size())
    out << "; the " << shown.size() << " of " << s.rows.size()
        << " series whose slowest column fell furthest below their own median (the JSON and CSV have each)";
  out << "; grey: no op of it ended in the column.</p>\n";
  svg::Heatmap h{.row_axis = "comm/func", .col_axis = "time", .format = [](double v) { return fmt::gbs(v); }};
  for (size_t i : shown) {
    const BandwidthSeriesRow& row = s.rows[i];
    h.row_labels.push_back(fmt::commLabel(row.comm, row.comm_name) + " " + row.func);
    h.values.emplace_back();
    for (double v : row.busbw_gbs) h.values.back().push_back(v >= 0 ? v : NAN);
  }
  h.col_labels = numberedLabels(s.rows.front().busbw_gbs.size(),
                                [&](size_t b) { return offsetLabel(s.bin_us * static_cast<double>(b)); });
  out << svg::heatmap(h);
  return out.str();
}

std::string bandwidthPlots(const std::vector<BandwidthRow>& rows) {
  std::ostringstream out;
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
  return out.str();
}

// Where each rank's GPU time went (whole run), the same per step for the rank with the most
// exposed communication, and that rank's worst step as a timeline strip.
std::string overlapCharts(const std::vector<OverlapRow>& rows) {
  std::ostringstream out;
  constexpr size_t kMaxSteps = 60;
  const std::vector<std::string> kSegments = {"communication under compute", "exposed communication", "compute alone", "GPU idle"};
  const auto us = [](double v) { return fmt::duration(v); };
  std::vector<const OverlapRow*> measured;
  for (const OverlapRow& o : rows)
    if (o.available) measured.push_back(&o);
  if (measured.empty()) return "";
  const auto more_exposed = [](const OverlapRow* a, const OverlapRow* b) { return a->exposed_us > b->exposed_us; };
  const OverlapRow* worst = *std::min_element(measured.begin(), measured.end(), more_exposed);
  std::string title = "GPU time per rank, from its first to its last communication kernel";
  if (measured.size() > kMaxRows)
    title += " (the " + std::to_string(kMaxRows) + " of " + std::to_string(measured.size()) + " ranks with most exposed communication)";
  svg::StackedBars ranks{.title = title, .segment_names = kSegments, .format = us};
  for (size_t i : keptRows(measured.size(), [&](size_t i) { return -measured[i]->exposed_us; })) {
    const OverlapRow* o = measured[i];
    ranks.row_labels.push_back("rank " + std::to_string(o->rank));
    ranks.values.push_back({o->overlapped_us, o->exposed_us, o->compute_only_us, o->idle_us});
  }
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
  if (worst->steps.size() > kMaxSteps)
    out << "<p class=\"note\">first " << kMaxSteps << " rows of " << worst->steps.size() << " (" << worst->step_count << " steps)</p>\n";
  const StepTimeline& t = worst->most_exposed_step;
  if (t.step < 0) return out.str();
  out << svg::timelineStrip({.title = "rank " + std::to_string(worst->rank) + ", step " + std::to_string(t.step) + " (its most exposed)",
                             .start = t.start_us, .end = t.end_us, .lane_names = {"communication", "compute"},
                             .lanes = {t.comm, t.compute}, .format = us,
                             .lane_segments = {1, 2}});  // the bars' "exposed communication" and "compute alone" colours
  return out.str();
}

std::string callPathChart(const std::vector<CallPathRow>& rows) {
  const bool exposed = everyExposureKnown(rows);
  svg::Icicle chart{.title = exposed ? "Exposed communication by NVTX path, summed over ranks" : "Communication by NVTX path, summed over ranks",
                    .format = [](double us) { return fmt::duration(us); }};
  for (const CallPathRow& row : rows) {
    const std::vector<std::string_view> ranges = PhasePathTally::ranges(row.path);
    chart.stacks.emplace_back(ranges.begin(), ranges.end());
    chart.values.push_back(exposed ? row.exposed_us : row.comm_us);
  }
  return "<p class=\"note\">Each box a range, as wide as the " + std::string(exposed ? "exposed " : "") +
         "communication of the ops issued inside it; the steps as one. Hover a box for its path and time.</p>\n" + svg::icicle(chart);
}

std::string callStackChart(const std::vector<CallStackRow>& rows) {
  svg::Icicle chart{.title = "Ops by the native call stack that issued them (estimated from samples), summed over ranks",
                    .format = [](double ops) { return fmt::fixed(ops, 0) + " ops"; }};
  for (const CallStackRow& row : rows) {
    const std::vector<std::string_view> frames = framesOf(row.stack);
    chart.stacks.emplace_back(frames.begin(), frames.end());
    chart.values.push_back(static_cast<double>(row.ops));
  }
  return "<p class=\"note\">Each box a function, as wide as the ops issued from inside it, outermost at the top. Hover a box "
         "for its stack and ops.</p>\n" + svg::icicle(chart);
}

}  // namespace commtrace::report::charts
