#include "tools/report/output/markdown_report.h"

#include <algorithm>
#include <cctype>

#include "tools/report/output/page.h"
#include "tools/report/output/report_sections.h"

namespace commtrace::report {
namespace {

constexpr std::string_view kInlineSyntax = "\\`*_[]<>|~&";

// Text as itself in a table cell: inline syntax escaped, line breaks as spaces (a cell is
// one line).
std::string inlineText(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    if (kInlineSyntax.find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

// The same at the start of a paragraph or list item, where a leading mark would also start a
// list, a heading or a quote.
std::string blockText(const std::string& text) {
  std::string out = inlineText(text);
  const size_t first = out.find_first_not_of(' ');
  if (first == std::string::npos) return out;
  if (std::string_view("-+#>=").find(out[first]) != std::string_view::npos) return out.insert(first, 1, '\\');
  const size_t digits = out.find_first_not_of("0123456789", first);  // "3. " or "3) " would start a numbered list
  if (digits != first && digits != std::string::npos && (out[digits] == '.' || out[digits] == ')')) out.insert(digits, 1, '\\');
  return out;
}

// GitHub-flavoured Markdown: "##" sections, "###" subsections, pipe tables with their
// numbers right-aligned. Rows are cut as on the terminal: the page is meant to be pasted.
class MarkdownPage final : public Page {
 public:
  explicit MarkdownPage(std::ostream& out) : out_(out) {}

  void section(std::string_view, const std::string& title, const std::string& about) override {
    pending_ = {"## " + inlineText(title)};
    if (!about.empty()) pending_.push_back("*" + inlineText(about) + "*");
  }
  void subsection(const std::string& title) override { pending_.push_back("### " + inlineText(title)); }

  void table(const Table& t, Rows rows, const std::string& when_empty) override {
    if (rows == Rows::kDetail) return;
    showTitles();
    if (t.rows.empty()) return paragraph(blockText(when_empty));
    const size_t shown = std::min(t.rows.size(), shownRows(rows));
    std::string header = "|", rule = "|";
    for (const Table::Column& c : t.columns) {
      header += " " + inlineText(c.header) + " |";
      rule += c.align == Table::Align::kRight ? " ---: |" : " --- |";
    }
    out_ << header << '\n' << rule << '\n';
    for (size_t r = 0; r < shown; ++r) {
      out_ << '|';
      for (size_t c = 0; c < t.columns.size(); ++c) out_ << ' ' << inlineText(c < t.rows[r].size() ? t.rows[r][c] : "") << " |";
      out_ << '\n';
    }
    out_ << '\n';
    if (t.rows.size() > shown) paragraph("(" + std::to_string(t.rows.size() - shown) + " more rows: --format json or csv for all)");
  }
  void numbered(const std::vector<std::string>& items, const std::string& when_empty) override {
    showTitles();
    if (items.empty()) return paragraph(blockText(when_empty));
    for (size_t i = 0; i < items.size(); ++i) out_ << i + 1 << ". " << blockText(items[i]) << '\n';
    out_ << '\n';
  }
  void fields(const PageFields& fields) override {
    showTitles();
    for (const auto& [key, value] : fields) out_ << "- **" << inlineText(key) << "**: " << inlineText(value) << '\n';
    out_ << '\n';
  }
  void lines(const std::string& heading, const std::vector<std::string>& items, Rows rows) override {
    if (items.empty() || rows == Rows::kDetail) return;
    showTitles();
    const size_t shown = std::min(items.size(), shownRows(rows));
    out_ << blockText(heading) << ":\n\n";
    for (size_t i = 0; i < shown; ++i) out_ << "- " << blockText(items[i]) << '\n';
    if (items.size() > shown) out_ << "- (" << items.size() - shown << " more: --format json or csv for all)\n";
    out_ << '\n';
  }
  void note(const std::string& line) override {
    showTitles();
    paragraph(blockText(line));
  }
  void chart(const std::function<std::string()>&) override {}

  void finish() { paragraph(blockText(std::string(kWhereTheRestIs))); }

 private:
  void paragraph(const std::string& text) { out_ << text << "\n\n"; }
  void showTitles() {
    for (const std::string& title : pending_) paragraph(title);
    pending_.clear();
  }

  std::ostream& out_;
  std::vector<std::string> pending_;  // the section's heading, what it shows and subheadings, not written yet
};

}  // namespace

void writeMarkdown(const Report& r, std::ostream& out) {
  out << "# commtrace report\n\n";
  MarkdownPage page(out);
  writePage(r, page);
  page.finish();
}

}  // namespace commtrace::report
