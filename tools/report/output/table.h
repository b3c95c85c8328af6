// A table of already-formatted cells, built once (report_tables.h) and printed by the text
// writer (padded columns, truncated) and the HTML writer (every row).
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace commtrace::report {

struct Table {
  enum class Align { kLeft, kRight };
  struct Column {
    std::string header;
    Align align = Align::kLeft;
  };
  std::vector<Column> columns;
  std::vector<std::vector<std::string>> rows;
};

// Indented two spaces, each column padded to its widest shown cell, numbers right-aligned;
// rows past max_rows become "(N more rows: " + where_all + ")".
void printTable(const Table& table, std::ostream& out, size_t max_rows, const char* where_all = "--format json or csv for all");

}  // namespace commtrace::report
