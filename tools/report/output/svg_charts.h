// The HTML report's charts as inline SVG strings, generated here so that the page needs no
// script library and fetches nothing: a heatmap (communication matrix, lateness over time)
// and a scatter plot with a log x axis (bandwidth by message size). Every text is escaped.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace commtrace::report::svg {

std::string escape(const std::string& text);  // for HTML text and attribute values

struct Heatmap {
  std::string row_axis, col_axis;  // "sender rank", "receiver rank"
  std::vector<std::string> row_labels, col_labels;
  std::vector<std::vector<double>> values;  // [row][col]; NaN: no data (drawn grey)
  bool log_scale = false;                   // colour by log(1 + v): bytes span many decades
  std::function<std::string(double)> format;  // a value in a cell's tooltip and the legend
};
std::string heatmap(const Heatmap& spec);

struct Series {
  std::string name;
  std::vector<double> x, y;
  std::vector<std::string> tooltips;  // one per point
};
struct ScatterPlot {
  std::string title, x_axis, y_axis;
  // Points joined in x order, one colour each; series that would be drawn on the same
  // pixels are drawn once, named "a = b".
  std::vector<Series> series;
  std::function<std::string(double)> x_tick;  // label of a tick on the log2 x axis
};
std::string scatterLogX(const ScatterPlot& spec);

// Horizontal bars, one per row, each cut into segments (one colour per segment name, shared
// legend), all on one scale: the largest row fills the width.
struct StackedBars {
  std::string title;
  std::vector<std::string> segment_names;  // in drawing order, left to right
  std::vector<std::string> row_labels;
  std::vector<std::vector<double>> values;  // [row][segment], >= 0
  std::function<std::string(double)> format;  // a value: in tooltips, each bar's total and the scale
};
std::string stackedBars(const StackedBars& spec);

// Intervals of one window on lanes, one colour per lane: the timeline of one step.
struct TimelineStrip {
  std::string title;
  double start = 0, end = 0;  // the window
  std::vector<std::string> lane_names;
  std::vector<std::vector<std::pair<double, double>>> lanes;  // [lane] -> intervals within the window
  std::function<std::string(double)> format;  // a time relative to the window's start
  // Per lane, its colour as a segment index of the stacked bars beside it (empty: lane i is
  // segment i): a lane must mean what its colour means in the bars' legend.
  std::vector<size_t> lane_segments;
};
std::string timelineStrip(const TimelineStrip& spec);

// An icicle chart (a flame graph drawn top down): each stack's frames, from the top, as
// boxes on rows by depth, a box as wide as the values of every stack through it. Stacks
// sharing their first frames share those boxes.
struct Icicle {
  std::string title;
  std::vector<std::vector<std::string>> stacks;  // each stack's frames, outermost first
  std::vector<double> values;                     // one per stack, >= 0
  std::function<std::string(double)> format;      // a value: in tooltips and the total
};
std::string icicle(const Icicle& spec);

}  // namespace commtrace::report::svg
