// The inline SVG charts: y-axis labels that tell values apart, series that would be drawn
// over each other drawn once under all their names, stacked bars and timeline strips to scale.
#include "tools/report/output/svg_charts.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <regex>

namespace commtrace::report::svg {
namespace {

std::vector<std::string> yLabels(const std::string& svg) {
  std::vector<std::string> out;
  const std::regex label(R"(class="tick" text-anchor="end">([^<]*)</text>)");
  for (std::sregex_iterator it(svg.begin(), svg.end(), label), end; it != end; ++it) out.push_back((*it)[1]);
  return out;
}

ScatterPlot plot(std::vector<Series> series) {
  return ScatterPlot{.title = "Broadcast", .x_axis = "size", .y_axis = "busBw GB/s", .series = std::move(series),
                     .x_tick = [](double) { return std::string("x"); }};
}

Series series(std::string name, std::vector<double> x, std::vector<double> y) {
  return Series{.name = std::move(name), .x = x, .y = y, .tooltips = std::vector<std::string>(x.size(), "t")};
}

// Row labels are right-aligned against the grid: a long one ("dp.1 ReduceScatter") starts
// inside the picture, not cut at its left edge (a fixed 70 px margin showed "educeScatter").
TEST(SvgCharts, HeatmapRowLabelsFitTheirMargin) {
  Heatmap h{.row_axis = "comm/func", .col_axis = "time", .format = [](double v) { return std::to_string(v); }};
  h.row_labels = {"tp.1 AllReduce", "dp.1 ReduceScatter"};
  h.col_labels = {"0", "+1 ms"};
  h.values = {{1, 2}, {3, 4}};
  const std::string chart = heatmap(h);
  const std::regex label(R"re(<text x="([0-9.]+)"[^>]*text-anchor="end">dp\.1 ReduceScatter</text>)re");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(chart, m, label)) << chart.substr(0, 600);
  EXPECT_GE(std::stod(m[1]), 6.5 * 18) << "its right end must leave room for its 18 characters";
}

// A strip's lane takes the colour its segment has in the bars beside it: compute drawn in the
// colour the bars use for exposed communication read as the opposite of what it was.
TEST(SvgCharts, TimelineLanesTakeTheirSegmentsColours) {
  const std::string strip = timelineStrip({.title = "t", .start = 0, .end = 10, .lane_names = {"communication", "compute"},
                                           .lanes = {{{1, 2}}, {{3, 4}}}, .format = [](double) { return std::string(); },
                                           .lane_segments = {1, 2}});
  EXPECT_NE(strip.find("fill=\"#d55e00\"><title>communication"), std::string::npos) << strip;
  EXPECT_NE(strip.find("fill=\"#009e73\"><title>compute"), std::string::npos) << strip;
}

// Stacked bars carry their totals and a scale (they had neither).
TEST(SvgCharts, StackedBarsShowTheirTotalsAndAScale) {
  const std::string bars = stackedBars({.title = "GPU time", .segment_names = {"a", "b"}, .row_labels = {"rank 0", "rank 1"},
                                        .values = {{1, 2}, {4, 4}}, .format = [](double v) { return std::to_string(static_cast<int>(v)) + " us"; }});
  EXPECT_NE(bars.find(">3 us</text>"), std::string::npos) << "rank 0's total";
  EXPECT_NE(bars.find(">8 us</text>"), std::string::npos) << "rank 1's total, and the scale's end";
  EXPECT_NE(bars.find("text-anchor=\"middle\">4 us</text>"), std::string::npos) << "the scale's middle";
}

TEST(SvgCharts, SmallValuesGetDistinctRoundYLabels) {
  // A 4 KiB Broadcast at 0.04 GB/s: one decimal printed "0.0" on every gridline.
  EXPECT_EQ(yLabels(scatterLogX(plot({series("world", {4096}, {0.04})}))),
            (std::vector<std::string>{"0.00", "0.01", "0.02", "0.03", "0.04", "0.05"}));
  EXPECT_EQ(yLabels(scatterLogX(plot({series("dp", {1 << 24}, {23.01})}))),
            (std::vector<std::string>{"0", "10", "20", "30"}));
  EXPECT_EQ(yLabels(scatterLogX(plot({series("tp", {1 << 20}, {110.7})}))),
            (std::vector<std::string>{"0", "50", "100", "150"}));
  EXPECT_EQ(yLabels(scatterLogX(plot({series("idle", {1 << 20}, {0})}))).size(), 2u);
}

TEST(SvgCharts, SeriesDrawnOnTheSamePixelsAreDrawnOnceUnderAllTheirNames) {
  const std::string svg = scatterLogX(plot({series("dp.0", {1 << 24, 1 << 25}, {23.01, 23.0}),
                                            series("dp.3", {1 << 24, 1 << 25}, {2.98, 2.98}),
                                            series("dp.1", {1 << 25, 1 << 24}, {23.0, 23.01})}));
  EXPECT_NE(svg.find(">dp.0 = dp.1</text>"), std::string::npos) << svg;
  EXPECT_NE(svg.find(">dp.3</text>"), std::string::npos) << svg;
  size_t polylines = 0;
  for (size_t at = svg.find("<polyline"); at != std::string::npos; at = svg.find("<polyline", at + 1)) ++polylines;
  EXPECT_EQ(polylines, 2u);
}

// rect widths, in drawing order, of the rects that carry a tooltip.
std::vector<double> barWidths(const std::string& svg) {
  std::vector<double> out;
  const std::regex bar(R"re(width="([0-9.]+)" height="[0-9.]+" fill="[^"]*"><title>)re");
  for (std::sregex_iterator it(svg.begin(), svg.end(), bar), end; it != end; ++it) out.push_back(std::stod((*it)[1]));
  return out;
}

TEST(SvgCharts, StackedBarsShareOneScaleAndNameEverySegment) {
  const std::string svg = stackedBars({.title = "GPU time", .segment_names = {"under", "exposed", "idle"}, .row_labels = {"rank 0", "rank 1"},
                                       .values = {{10, 20, 30}, {15, 0, 15}}, .format = [](double v) { return std::to_string(int(v)) + " us"; }});
  // The longest row (60) fills 600 px; a zero segment is not drawn.
  EXPECT_EQ(barWidths(svg), (std::vector<double>{100, 200, 300, 150, 150}));
  EXPECT_NE(svg.find("<title>rank 1, idle: 15 us</title>"), std::string::npos) << svg;
  for (const char* name : {">under</text>", ">exposed</text>", ">idle</text>"}) EXPECT_NE(svg.find(name), std::string::npos) << name;
  EXPECT_EQ(stackedBars({.title = "none", .format = [](double) { return std::string(); }}), "<p>no data</p>");
}

TEST(SvgCharts, TimelineStripClipsIntervalsToTheWindow) {
  const std::string svg = timelineStrip({.title = "step 3", .start = 100, .end = 200, .lane_names = {"communication", "compute"},
                                         .lanes = {{{90, 150}}, {{150, 175}, {250, 260}}},
                                         .format = [](double v) { return std::to_string(int(v)); }});
  EXPECT_EQ(barWidths(svg), (std::vector<double>{300, 150}));  // [100, 150) and [150, 175) of a 600 px window; [250, 260) is outside
  EXPECT_NE(svg.find("<title>compute: 50 to 75</title>"), std::string::npos) << svg;
}

// Stacks sharing their first frames share those boxes, each as wide as the values through
// it; a box's tooltip is its whole path, escaped.
TEST(SvgCharts, AnIcicleMergesSharedFramesAndSizesEachByItsValues) {
  const Icicle chart{.title = "exposed",
                     .stacks = {{"step", "fwd", "layers.0"}, {"step", "fwd", "layers.1"}, {"step", "bwd <x>"}},
                     .values = {100, 300, 600},
                     .format = [](double v) { return std::to_string(static_cast<int>(v)); }};
  const std::string svg = icicle(chart);
  const auto widthOf = [&](const std::string& title) {
    const std::regex box("width=\"([0-9.]+)\"[^>]*><title>" + title + "</title>");
    std::smatch m;
    EXPECT_TRUE(std::regex_search(svg, m, box)) << title << "\n" << svg;
    return m.empty() ? 0.0 : std::stod(m[1]);
  };
  const double step = widthOf("step: 1000"), fwd = widthOf("step / fwd: 400"), l0 = widthOf("step / fwd / layers.0: 100");
  EXPECT_NEAR(fwd, 0.4 * step, 0.01);
  EXPECT_NEAR(l0, 0.1 * step, 0.01);
  EXPECT_NEAR(widthOf("step / bwd &lt;x&gt;: 600"), 0.6 * step, 0.01);
  EXPECT_EQ(std::count(svg.begin(), svg.end(), '\n'), 8) << "a line a box (step, fwd, two layers, bwd), the title, the svg's two tags";
  EXPECT_NE(svg.find("exposed (1000 in all)"), std::string::npos);
  EXPECT_EQ(icicle(Icicle{.title = "none", .stacks = {{"a"}}, .values = {0}, .format = {}}), "<p>no data</p>");
}

}  // namespace
}  // namespace commtrace::report::svg
