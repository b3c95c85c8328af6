#include "tools/report/output/table.h"

#include <algorithm>

namespace commtrace::report {
namespace {

// Display width: UTF-8 continuation bytes take no column.
size_t displayWidth(const std::string& s) {
  return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

// A cell on one terminal line: line breaks and tabs (names come from the files) shown as \n, \t.
std::string cellOf(const std::vector<std::string>& row, size_t c) {
  if (c >= row.size()) return "";
  std::string out;
  for (char ch : row[c]) {
    if (ch == '\n') out += "\\n";
    else if (ch == '\r') out += "\\r";
    else if (ch == '\t') out += "\\t";
    else out += ch;
  }
  return out;
}

}  // namespace

void printTable(const Table& table, std::ostream& out, size_t max_rows, const char* where_all) {
  const size_t shown = std::min(max_rows, table.rows.size());
  std::vector<size_t> width(table.columns.size());
  for (size_t c = 0; c < table.columns.size(); ++c) {
    width[c] = displayWidth(table.columns[c].header);
    for (size_t r = 0; r < shown; ++r) width[c] = std::max(width[c], displayWidth(cellOf(table.rows[r], c)));
  }
  auto printLine = [&](auto cellAt) {
    std::string line = " ";
    for (size_t c = 0; c < table.columns.size(); ++c) {
      const std::string& cell = cellAt(c);
      const std::string pad(width[c] - displayWidth(cell), ' ');
      line += ' ';
      line += table.columns[c].align == Table::Align::kRight ? pad + cell : cell + pad;
      line += ' ';
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << '\n';
  };
  printLine([&](size_t c) { return table.columns[c].header; });
  for (size_t r = 0; r < shown; ++r) printLine([&](size_t c) { return cellOf(table.rows[r], c); });
  if (table.rows.size() > shown) out << "  (" << table.rows.size() - shown << " more rows: " << where_all << ")\n";
}

}  // namespace commtrace::report
