#include "tools/report/output/svg_charts.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <numeric>
#include <sstream>

#include "tools/report/format.h"

namespace commtrace::report::svg {
namespace {

// Colour-blind-safe categorical palette (Okabe–Ito).
constexpr const char* kPalette[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"};
constexpr const char* kNoData = "#d9d9d9";

// Sequential white -> yellow -> red -> dark red for t in [0, 1].
std::string heatColour(double t) {
  static constexpr double kStops[][3] = {{255, 255, 255}, {254, 217, 118}, {240, 59, 32}, {128, 0, 38}};
  t = std::clamp(t, 0.0, 1.0) * 3;
  const int i = std::min(static_cast<int>(t), 2);
  const double f = t - i;
  char buf[8];
  auto channel = [&](int c) { return static_cast<int>(std::lround(kStops[i][c] + f * (kStops[i + 1][c] - kStops[i][c]))); };
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", channel(0), channel(1), channel(2));
  return buf;
}

std::string num(double v) { return fmt::fixed(v, 1); }

// Every k-th label, so that labels (about 6 px a character at 10 px) never overlap.
size_t labelStride(double cell_px, const std::vector<std::string>& labels) {
  size_t longest = 1;
  for (const std::string& l : labels) longest = std::max(longest, l.size());
  return std::max<size_t>(1, static_cast<size_t>(std::ceil((6.0 * static_cast<double>(longest) + 8) / cell_px)));
}

// Four or five gridlines at a round step (1, 2 or 5 times a power of ten) from 0 past
// top, each labelled with as many decimals as the step needs: a 0.04 GB/s Broadcast plot
// reads 0.01, 0.02, ... where one decimal for everything printed 0.0 on every line.
struct YTicks {
  double step = 1, top = 1;
  int decimals = 0;
};
YTicks yTicks(double max_value) {
  const double target = max_value > 0 ? max_value / 4 : 0.25;
  const double power = std::pow(10.0, std::floor(std::log10(target)));
  double step = power;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * power >= target) {
      step = m * power;
      break;
    }
  YTicks t{.step = step, .top = step * std::ceil(std::max(max_value, step) / step), .decimals = 0};
  while (t.top < max_value * 1.05) t.top += step;  // a point never sits on the frame
  t.decimals = std::max(0, -static_cast<int>(std::floor(std::log10(step) + 1e-9)));
  return t;
}

// Series whose points land on the same pixels would hide all but the last drawn: they
// become one series named after all of them ("dp.0 = dp.1 = dp.2").
std::vector<Series> mergeCoincident(std::vector<Series> series, const std::function<std::string(const Series&)>& drawn) {
  std::vector<Series> out;
  std::vector<std::string> keys;
  for (Series& se : series) {
    const std::string key = drawn(se);
    const auto same = std::find(keys.begin(), keys.end(), key);
    if (same == keys.end()) {
      keys.push_back(key);
      out.push_back(std::move(se));
      continue;
    }
    out[static_cast<size_t>(same - keys.begin())].name += " = " + se.name;
  }
  return out;
}

}  // namespace

std::string escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

constexpr double kTickCharPx = 6.5;

std::string heatmap(const Heatmap& h) {
  const size_t rows = h.values.size();
  const size_t cols = rows == 0 ? 0 : h.values[0].size();
  if (rows == 0 || cols == 0) return "<p>no data</p>";
  const double cell_w = std::clamp(720.0 / static_cast<double>(cols), 3.0, 28.0);
  const double cell_h = std::clamp(720.0 / static_cast<double>(rows), 3.0, 28.0);
  // Row labels are right-aligned against the grid: the margin fits the longest ("dp.1
  // ReduceScatter" was cut to "educeScatter" by a fixed 70 px), at an 11 px font's ~6.5 px a character.
  size_t longest = 0;
  for (const std::string& label : h.row_labels) longest = std::max(longest, label.size());
  const double left = std::max(70.0, 12 + kTickCharPx * static_cast<double>(longest)), top = 30;
  const double grid_w = cell_w * static_cast<double>(cols), grid_h = cell_h * static_cast<double>(rows);
  const double width = std::max(left + grid_w + 20, left + 420), height = top + grid_h + 80;
  double max_v = 0;
  for (const auto& row : h.values)
    for (double v : row)
      if (std::isfinite(v)) max_v = std::max(max_v, v);
  auto scaled = [&](double v) { return max_v <= 0 ? 0.0 : h.log_scale ? std::log1p(v) / std::log1p(max_v) : v / max_v; };
  auto x = [&](size_t c) { return left + cell_w * static_cast<double>(c); };
  auto y = [&](size_t r) { return top + cell_h * static_cast<double>(r); };

  std::ostringstream s;
  s << "<svg class=\"chart\" width=\"" << num(width) << "\" height=\"" << num(height) << "\" role=\"img\">\n";
  const size_t col_step = labelStride(cell_w, h.col_labels), row_step = std::max<size_t>(1, static_cast<size_t>(std::ceil(12 / cell_h)));
  for (size_t c = 0; c < cols; c += col_step)
    s << "<text x=\"" << num(x(c) + cell_w / 2) << "\" y=\"" << num(top - 6) << "\" class=\"tick\" text-anchor=\"middle\">" << escape(h.col_labels.at(c))
      << "</text>\n";
  for (size_t r = 0; r < rows; r += row_step)
    s << "<text x=\"" << num(left - 6) << "\" y=\"" << num(y(r) + cell_h / 2 + 4) << "\" class=\"tick\" text-anchor=\"end\">" << escape(h.row_labels.at(r))
      << "</text>\n";
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < cols && c < h.values[r].size(); ++c) {
      const double v = h.values[r][c];
      s << "<rect x=\"" << num(x(c)) << "\" y=\"" << num(y(r)) << "\" width=\"" << num(cell_w) << "\" height=\"" << num(cell_h) << "\" fill=\""
        << (std::isfinite(v) ? heatColour(scaled(v)) : kNoData) << "\"><title>"
        << escape(h.row_axis + ' ' + h.row_labels.at(r) + ", " + h.col_axis + ' ' + h.col_labels.at(c) + ": " +
                  (std::isfinite(v) ? h.format(v) : "no data"))
        << "</title></rect>\n";
    }
  const double axis_y = top + grid_h + 18;
  s << "<text x=\"" << num(left) << "\" y=\"" << num(axis_y) << "\" class=\"axis\">rows: " << escape(h.row_axis) << "; columns: " << escape(h.col_axis)
    << "</text>\n";
  // Legend: the colour ramp from 0 to the largest value, and the colour of no data.
  const double legend_y = axis_y + 10;
  for (int i = 0; i < 100; ++i)
    s << "<rect x=\"" << num(left + 2.0 * i) << "\" y=\"" << num(legend_y) << "\" width=\"2\" height=\"10\" fill=\"" << heatColour(i / 99.0) << "\"/>";
  s << "\n<text x=\"" << num(left) << "\" y=\"" << num(legend_y + 24) << "\" class=\"tick\">0</text><text x=\"" << num(left + 200)
    << "\" y=\"" << num(legend_y + 24) << "\" class=\"tick\" text-anchor=\"end\">" << escape(h.format(max_v))
    << (h.log_scale ? " (log scale)" : "") << "</text><rect x=\"" << num(left + 230) << "\" y=\"" << num(legend_y)
    << "\" width=\"10\" height=\"10\" fill=\"" << kNoData << "\"/><text x=\"" << num(left + 245) << "\" y=\"" << num(legend_y + 9)
    << "\" class=\"tick\">no data</text>\n</svg>\n";
  return s.str();
}

std::string scatterLogX(const ScatterPlot& p) {
  double x_min = INFINITY, x_max = 0, y_max = 0;
  for (const Series& se : p.series)
    for (size_t i = 0; i < se.x.size(); ++i)
      if (se.x[i] > 0) x_min = std::min(x_min, se.x[i]), x_max = std::max(x_max, se.x[i]), y_max = std::max(y_max, se.y[i]);
  if (x_max <= 0) return "<p>no data</p>";
  // A power of two of margin on each side, so that no point sits on the frame.
  const double lo = std::floor(std::log2(x_min)) - 1, hi = std::ceil(std::log2(x_max)) + 1;
  const YTicks ticks = yTicks(y_max);
  const double left = 60, top = 30, w = 520, h = 240;
  auto px = [&](double x) { return left + (std::log2(x) - lo) / (hi - lo) * w; };
  auto py = [&](double y) { return top + h - y / ticks.top * h; };
  // The points of a series in x order, as drawn.
  auto drawnPoints = [&](const Series& se) {
    std::vector<size_t> order(se.x.size());
    std::iota(order.begin(), order.end(), 0);
    std::erase_if(order, [&](size_t i) { return se.x[i] <= 0; });
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return se.x[a] < se.x[b]; });
    return order;
  };
  const std::vector<Series> series = mergeCoincident(p.series, [&](const Series& se) {
    std::string key;
    for (size_t i : drawnPoints(se)) key += num(px(se.x[i])) + ',' + num(py(se.y[i])) + ' ';
    return key;
  });
  size_t longest_name = 0;
  for (const Series& se : series) longest_name = std::max(longest_name, se.name.size());
  const double width = left + w + 40 + 6.0 * static_cast<double>(std::max<size_t>(longest_name, 20)),
               height = std::max(top + h + 50, top + 18.0 * static_cast<double>(series.size()) + 10);

  std::ostringstream s;
  s << "<svg class=\"chart\" width=\"" << num(width) << "\" height=\"" << num(height) << "\" role=\"img\">\n<text x=\"" << num(left) << "\" y=\"18\" class=\"title\">"
    << escape(p.title) << "</text>\n<rect x=\"" << num(left) << "\" y=\"" << num(top) << "\" width=\"" << num(w) << "\" height=\"" << num(h)
    << "\" class=\"frame\"/>\n";
  const int x_step = std::max(1, static_cast<int>(std::ceil((hi - lo) / 8)));
  for (double e = lo; e <= hi; e += x_step)
    s << "<text x=\"" << num(px(std::exp2(e))) << "\" y=\"" << num(top + h + 16) << "\" class=\"tick\" text-anchor=\"middle\">"
      << escape(p.x_tick(std::exp2(e))) << "</text>\n";
  for (double y = 0; y <= ticks.top * (1 + 1e-9); y += ticks.step) {
    s << "<line x1=\"" << num(left) << "\" x2=\"" << num(left + w) << "\" y1=\"" << num(py(y)) << "\" y2=\"" << num(py(y)) << "\" class=\"grid\"/>"
      << "<text x=\"" << num(left - 6) << "\" y=\"" << num(py(y) + 4) << "\" class=\"tick\" text-anchor=\"end\">" << fmt::fixed(y, ticks.decimals) << "</text>\n";
  }
  s << "<text x=\"" << num(left + w / 2) << "\" y=\"" << num(top + h + 36) << "\" class=\"axis\" text-anchor=\"middle\">" << escape(p.x_axis)
    << "</text>\n<text x=\"14\" y=\"" << num(top + h / 2) << "\" class=\"axis\" text-anchor=\"middle\" transform=\"rotate(-90 14 " << num(top + h / 2)
    << ")\">" << escape(p.y_axis) << "</text>\n";
  for (size_t k = 0; k < series.size(); ++k) {
    const Series& se = series[k];
    const char* colour = kPalette[k % std::size(kPalette)];
    const std::vector<size_t> order = drawnPoints(se);
    s << "<polyline fill=\"none\" stroke=\"" << colour << "\" points=\"";
    for (size_t i : order) s << num(px(se.x[i])) << ',' << num(py(se.y[i])) << ' ';
    s << "\"/>\n";
    for (size_t i : order)
      s << "<circle cx=\"" << num(px(se.x[i])) << "\" cy=\"" << num(py(se.y[i])) << "\" r=\"3.5\" fill=\"" << colour << "\"><title>"
        << escape(se.name + ": " + se.tooltips.at(i)) << "</title></circle>\n";
    const double ly = top + 10 + 18.0 * static_cast<double>(k);
    s << "<rect x=\"" << num(left + w + 16) << "\" y=\"" << num(ly - 9) << "\" width=\"10\" height=\"10\" fill=\"" << colour << "\"/><text x=\""
      << num(left + w + 32) << "\" y=\"" << num(ly) << "\" class=\"tick\">" << escape(se.name) << "</text>\n";
  }
  s << "</svg>\n";
  return s.str();
}

namespace {

// Distinct enough for four segments or lanes, and readable for the common colour blindnesses.
constexpr const char* kSegmentColours[] = {"#0072b2", "#d55e00", "#009e73", "#bbbbbb", "#cc79a7", "#e69f00"};

const char* segmentColour(size_t i) { return kSegmentColours[i % std::size(kSegmentColours)]; }

void legend(std::ostringstream& s, const std::vector<std::string>& names, double left, double y) {
  double x = left;
  for (size_t i = 0; i < names.size(); ++i) {
    s << "<rect x=\"" << num(x) << "\" y=\"" << num(y - 9) << "\" width=\"10\" height=\"10\" fill=\"" << segmentColour(i) << "\"/>"
      << "<text x=\"" << num(x + 14) << "\" y=\"" << num(y) << "\" class=\"tick\">" << escape(names[i]) << "</text>";
    x += 24 + 7.0 * static_cast<double>(names[i].size());
  }
  s << '\n';
}

}  // namespace

std::string stackedBars(const StackedBars& b) {
  double max_total = 0;
  for (const auto& row : b.values) {
    double total = 0;
    for (double v : row) total += std::max(0.0, v);
    max_total = std::max(max_total, total);
  }
  if (b.values.empty() || max_total <= 0) return "<p>no data</p>";
  const double left = 90, top = 40, bar_h = 14, gap = 4, w = 600, total_w = 80;
  const double bars_end = top + static_cast<double>(b.values.size()) * (bar_h + gap);
  const double height = bars_end + 30;
  std::ostringstream s;
  s << "<svg class=\"chart\" width=\"" << num(left + w + total_w) << "\" height=\"" << num(height) << "\" role=\"img\">\n"
    << "<text x=\"" << num(left) << "\" y=\"14\" class=\"axis\">" << escape(b.title) << "</text>\n";
  legend(s, b.segment_names, left, 32);
  for (size_t r = 0; r < b.values.size(); ++r) {
    const double y = top + static_cast<double>(r) * (bar_h + gap);
    s << "<text x=\"" << num(left - 6) << "\" y=\"" << num(y + bar_h - 3) << "\" class=\"tick\" text-anchor=\"end\">"
      << escape(b.row_labels.at(r)) << "</text>";
    double x = left;
    for (size_t i = 0; i < b.values[r].size(); ++i) {
      const double v = std::max(0.0, b.values[r][i]), width = v / max_total * w;
      if (width <= 0) continue;
      s << "<rect x=\"" << num(x) << "\" y=\"" << num(y) << "\" width=\"" << num(width) << "\" height=\"" << num(bar_h)
        << "\" fill=\"" << segmentColour(i) << "\"><title>" << escape(b.row_labels.at(r) + ", " + b.segment_names.at(i) + ": " + b.format(v))
        << "</title></rect>";
      x += width;
    }
    double total = 0;
    for (double v : b.values[r]) total += std::max(0.0, v);
    s << "<text x=\"" << num(x + 4) << "\" y=\"" << num(y + bar_h - 3) << "\" class=\"tick\">" << escape(b.format(total)) << "</text>\n";
  }
  // The scale: the bars had neither values nor an axis.
  const double axis_y = bars_end + 12;
  for (const double share : {0.0, 0.5, 1.0})
    s << "<text x=\"" << num(left + share * w) << "\" y=\"" << num(axis_y) << "\" class=\"tick\" text-anchor=\""
      << (share == 0 ? "start" : share == 1 ? "end" : "middle") << "\">" << escape(share == 0 ? std::string("0") : b.format(share * max_total))
      << "</text>";
  s << "\n</svg>\n";
  return s.str();
}

std::string timelineStrip(const TimelineStrip& t) {
  if (t.end <= t.start || t.lanes.empty()) return "<p>no data</p>";
  const double left = 110, top = 40, lane_h = 16, gap = 6, w = 600;
  const double height = top + static_cast<double>(t.lanes.size()) * (lane_h + gap) + 30;
  auto px = [&](double time) { return left + (std::clamp(time, t.start, t.end) - t.start) / (t.end - t.start) * w; };
  std::ostringstream s;
  s << "<svg class=\"chart\" width=\"" << num(left + w + 20) << "\" height=\"" << num(height) << "\" role=\"img\">\n"
    << "<text x=\"" << num(left) << "\" y=\"14\" class=\"axis\">" << escape(t.title) << "</text>\n";
  for (size_t l = 0; l < t.lanes.size(); ++l) {
    const double y = top + static_cast<double>(l) * (lane_h + gap);
    s << "<text x=\"" << num(left - 6) << "\" y=\"" << num(y + lane_h - 4) << "\" class=\"tick\" text-anchor=\"end\">"
      << escape(t.lane_names.at(l)) << "</text><rect x=\"" << num(left) << "\" y=\"" << num(y) << "\" width=\"" << num(w)
      << "\" height=\"" << num(lane_h) << "\" fill=\"#f4f4f4\"/>";
    for (const auto& [a, b] : t.lanes[l]) {
      if (b <= t.start || a >= t.end) continue;
      s << "<rect x=\"" << num(px(a)) << "\" y=\"" << num(y) << "\" width=\"" << num(std::max(0.5, px(b) - px(a))) << "\" height=\""
        << num(lane_h) << "\" fill=\"" << segmentColour(l < t.lane_segments.size() ? t.lane_segments[l] : l) << "\"><title>" << escape(t.lane_names[l] + ": " + t.format(a - t.start) + " to " + t.format(b - t.start))
        << "</title></rect>";
    }
    s << '\n';
  }
  const double axis_y = top + static_cast<double>(t.lanes.size()) * (lane_h + gap) + 14;
  s << "<text x=\"" << num(left) << "\" y=\"" << num(axis_y) << "\" class=\"tick\">0</text><text x=\"" << num(left + w) << "\" y=\""
    << num(axis_y) << "\" class=\"tick\" text-anchor=\"end\">" << escape(t.format(t.end - t.start)) << "</text>\n</svg>\n";
  return s.str();
}

namespace {

// A frame of the icicle: its value with its descendants', children by name in first-seen order.
struct IcicleNode {
  std::string name;
  double value = 0;
  std::vector<IcicleNode> children;

  IcicleNode& child(const std::string& frame) {
    for (IcicleNode& c : children)
      if (c.name == frame) return c;
    children.push_back({frame, 0, {}});
    return children.back();
  }
};

struct IcicleLayout {
  double left, top, width, row_h, total;
  const std::function<std::string(double)>& format;
};

void drawIcicle(std::ostringstream& s, const IcicleNode& node, const std::string& path, double x, size_t depth, const IcicleLayout& l) {
  double at = x;
  for (size_t k = 0; k < node.children.size(); ++k) {
    const IcicleNode& c = node.children[k];
    const double w = c.value / l.total * l.width;
    const std::string full = path.empty() ? c.name : path + " / " + c.name;
    if (w >= 0.5) {
      const double y = l.top + static_cast<double>(depth) * l.row_h;
      s << "<g><rect x=\"" << num(at) << "\" y=\"" << num(y) << "\" width=\"" << num(w) << "\" height=\"" << num(l.row_h - 1)
        << "\" fill=\"" << segmentColour(depth) << "\" fill-opacity=\"0.8\"><title>" << escape(full + ": " + l.format(c.value)) << "</title></rect>";
      // About 6.5 px a character at the chart's font size: a label only where it fits.
      const size_t fits = static_cast<size_t>(std::max(0.0, (w - 6) / 6.5));
      if (fits >= 3)
        s << "<text x=\"" << num(at + 3) << "\" y=\"" << num(y + l.row_h - 5) << "\" class=\"tick\" fill=\"#fff\">"
          << escape(c.name.size() <= fits ? c.name : c.name.substr(0, fits - 2) + "..") << "</text>";
      s << "</g>\n";
      drawIcicle(s, c, full, at, depth + 1, l);
    }
    at += w;
  }
}

size_t icicleDepth(const IcicleNode& node) {
  size_t deepest = 0;
  for (const IcicleNode& c : node.children) deepest = std::max(deepest, 1 + icicleDepth(c));
  return deepest;
}

}  // namespace

std::string icicle(const Icicle& spec) {
  IcicleNode root;
  for (size_t i = 0; i < spec.stacks.size() && i < spec.values.size(); ++i) {
    const double v = std::max(0.0, spec.values[i]);
    root.value += v;
    IcicleNode* at = &root;
    for (const std::string& frame : spec.stacks[i]) {
      at = &at->child(frame);
      at->value += v;
    }
  }
  if (root.value <= 0) return "<p>no data</p>";
  const IcicleLayout layout{10, 34, 700, 20, root.value, spec.format};
  std::ostringstream s;
  const double height = layout.top + static_cast<double>(icicleDepth(root)) * layout.row_h + 10;
  s << "<svg class=\"chart\" width=\"" << num(layout.left + layout.width + 10) << "\" height=\"" << num(height) << "\" role=\"img\">\n"
    << "<text x=\"" << num(layout.left) << "\" y=\"14\" class=\"axis\">" << escape(spec.title + " (" + spec.format(root.value) + " in all)")
    << "</text>\n";
  drawIcicle(s, root, "", layout.left, 0, layout);
  s << "</svg>\n";
  return s.str();
}

}  // namespace commtrace::report::svg
