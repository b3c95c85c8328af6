#include "tools/report/output/text_report.h"

#include <algorithm>

#include "tools/report/output/page.h"
#include "tools/report/output/report_sections.h"

namespace commtrace::report {
namespace {

// The page on a terminal: a table's first rows, no charts, and a section's title only once
// it has something to show (a section of charts alone is left out).
class TextPage final : public Page {
 public:
  explicit TextPage(std::ostream& out) : out_(out) {}

  void section(std::string_view, const std::string& title, const std::string& about) override {
    pending_ = {about.empty() ? title : title + " (" + about + ")"};
  }
  void subsection(const std::string& title) override { pending_.push_back(title); }

  void table(const Table& table, Rows rows, const std::string& when_empty) override {
    if (rows == Rows::kDetail) return;
    showTitles();
    if (table.rows.empty()) out_ << "  " << when_empty << '\n';
    else printTable(table, out_, shownRows(rows));
  }
  void numbered(const std::vector<std::string>& items, const std::string& when_empty) override {
    showTitles();
    if (items.empty()) out_ << "  " << when_empty << '\n';
    for (size_t i = 0; i < items.size(); ++i) out_ << "  " << i + 1 << ". " << items[i] << '\n';
  }
  // "key  value" lines with the values in one column.
  void fields(const PageFields& fields) override {
    showTitles();
    size_t width = 0;
    for (const auto& [key, value] : fields) width = std::max(width, key.size());
    for (const auto& [key, value] : fields) out_ << "  " << key << std::string(width - key.size() + 2, ' ') << value << '\n';
  }
  void lines(const std::string& heading, const std::vector<std::string>& items, Rows rows) override {
    if (items.empty() || rows == Rows::kDetail) return;
    showTitles();
    const size_t shown = std::min(items.size(), shownRows(rows));
    out_ << "  " << heading << ":\n";
    for (size_t i = 0; i < shown; ++i) out_ << "    " << items[i] << '\n';
    if (items.size() > shown) out_ << "    (" << items.size() - shown << " more: --format json or csv for all)\n";
  }
  void note(const std::string& line) override {
    showTitles();
    out_ << "  " << line << '\n';
  }
  void chart(const std::function<std::string()>&) override {}

  void finish() { out_ << '\n' << kWhereTheRestIs << '\n'; }

 private:
  void showTitles() {
    for (const std::string& title : pending_) {
      out_ << (first_ ? "" : "\n") << title << '\n';
      first_ = false;
    }
    pending_.clear();
  }

  std::ostream& out_;
  std::vector<std::string> pending_;  // the section's title and subtitles not shown yet
  bool first_ = true;
};

}  // namespace

void writeText(const Report& r, std::ostream& out) {
  TextPage page(out);
  writePage(r, page);
  page.finish();
}

}  // namespace commtrace::report
