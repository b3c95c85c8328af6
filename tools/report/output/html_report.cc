#include "tools/report/output/html_report.h"

#include <algorithm>
#include <sstream>

#include "tools/report/output/page.h"
#include "tools/report/output/report_sections.h"
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
// (no counts in it), so a link to #stragglers keeps working from one run to the next. Every
// table to its 1,000th row, and the charts.
class HtmlPage final : public Page {
 public:
  void section(std::string_view id, const std::string& title, const std::string& about) override {
    toc_.emplace_back(std::string(id), title);
    body_ << "<h2 id=\"" << id << "\">" << escape(title) << " <a class=\"anchor\" href=\"#" << id << "\">#</a></h2>\n";
    if (!about.empty()) note(about);
  }
  void subsection(const std::string& title) override { body_ << "<h3>" << escape(title) << "</h3>\n"; }

  void table(const Table& t, Rows, const std::string& when_empty) override {
    if (t.rows.empty()) return note(when_empty.empty() ? "none" : when_empty);
    const size_t shown = std::min(t.rows.size(), kMaxTableRows);
    auto cls = [&](size_t c) { return t.columns[c].align == Table::Align::kRight ? " class=\"num\"" : ""; };
    body_ << "<table><thead><tr>";
    for (size_t c = 0; c < t.columns.size(); ++c) body_ << "<th" << cls(c) << '>' << escape(t.columns[c].header) << "</th>";
    body_ << "</tr></thead><tbody>\n";
    for (size_t r = 0; r < shown; ++r) {
      body_ << "<tr>";
      for (size_t c = 0; c < t.columns.size(); ++c) body_ << "<td" << cls(c) << '>' << escape(c < t.rows[r].size() ? t.rows[r][c] : "") << "</td>";
      body_ << "</tr>\n";
    }
    body_ << "</tbody></table>\n";
    if (t.rows.size() > shown) note(std::to_string(t.rows.size() - shown) + " more rows: --format json or csv for all");
  }
  void numbered(const std::vector<std::string>& items, const std::string& when_empty) override {
    if (items.empty()) return note(when_empty);
    body_ << "<ol class=\"findings\">\n";
    for (const std::string& item : items) body_ << "<li>" << escape(item) << "</li>\n";
    body_ << "</ol>\n";
  }
  void fields(const PageFields& fields) override {
    body_ << "<table>\n";
    for (const auto& [key, value] : fields) body_ << "<tr><th>" << escape(key) << "</th><td>" << escape(value) << "</td></tr>\n";
    body_ << "</table>\n";
  }
  void lines(const std::string& heading, const std::vector<std::string>& items, Rows) override {
    if (items.empty()) return;
    const size_t shown = std::min(items.size(), kMaxTableRows);
    body_ << "<p>" << escape(heading) << ":</p>\n<ul>\n";
    for (size_t i = 0; i < shown; ++i) body_ << "<li><code>" << escape(items[i]) << "</code></li>\n";
    body_ << "</ul>\n";
    if (items.size() > shown) note(std::to_string(items.size() - shown) + " more: --format json or csv for all");
  }
  void note(const std::string& line) override { body_ << "<p class=\"note\">" << escape(line) << "</p>\n"; }
  void chart(const std::function<std::string()>& html) override { body_ << html(); }

  void write(std::ostream& out) const {
    out << "<nav class=\"toc\"><b>Contents</b><ol>\n";
    for (const auto& [id, title] : toc_) out << "<li><a href=\"#" << id << "\">" << escape(title) << "</a></li>\n";
    out << "</ol></nav>\n" << body_.str();
  }

 private:
  // A table's rows on the page: a 16,384-rank run's tables of a row per rank, shown whole,
  // made most of a page past 10 MB.
  static constexpr size_t kMaxTableRows = 1000;

  std::ostringstream body_;
  std::vector<std::pair<std::string, std::string>> toc_;  // id, title
};

}  // namespace

void writeHtml(const Report& r, std::ostream& out) {
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>commtrace report: " << escape(r.run.dir)
      << "</title>\n<style>" << kStyle << "</style>\n</head>\n<body>\n<h1>commtrace report</h1>\n<p class=\"dir\">" << escape(r.run.dir) << "</p>\n";
  HtmlPage page;
  writePage(r, page);
  page.write(out);
  out << "</body>\n</html>\n";
}

}  // namespace commtrace::report
