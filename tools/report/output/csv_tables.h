// The report's CSV pieces: a table, its cells, a table of rows as their declaration
// (report_rows.h) says, and the tables whose shape is not one row per row. The sections
// (report_sections.h) say which tables the report has.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "tools/report/output/report_rows.h"
#include "tools/report/report.h"

namespace commtrace::report::csv {

using Line = std::vector<std::string>;

struct CsvTable {
  std::string file;
  Line header;
  std::vector<Line> rows;
};

inline std::string num(const rows::Value& v) { return rows::csvCell(v); }

// RFC 4180 lines, ended by CRLF.
void writeRow(const Line& row, std::ostream& out);

// A table of rows as their declaration (report_rows.h) says.
template <class Row>
CsvTable rowsTable(std::string file, const rows::Fields<Row>& fields, const std::vector<Row>& list) {
  CsvTable t{std::move(file), rows::csvHeader(fields), {}};
  for (const Row& row : list) t.rows.push_back(rows::csvCells(fields, row));
  return t;
}

// Long format: each part of each row on a line of its own, after the row's columns `parent`
// (a pick of its declaration). parts(row) lists them.
template <class Row, class Part, class Parts>
CsvTable partsTable(std::string file, const rows::Fields<Row>& parent, const rows::Fields<Part>& fields, const std::vector<Row>& list,
                    Parts parts) {
  CsvTable t{std::move(file), rows::csvHeader(parent), {}};
  for (std::string& column : rows::csvHeader(fields)) t.header.push_back(std::move(column));
  for (const Row& row : list)
    for (const Part& part : parts(row)) {
      Line line = rows::csvCells(parent, row);
      for (std::string& cell : rows::csvCells(fields, part)) line.push_back(std::move(cell));
      t.rows.push_back(std::move(line));
    }
  return t;
}

// A ranks x ranks grid: first column the sender, header row the receivers.
template <class T>
CsvTable gridTable(std::string file, const std::vector<std::vector<T>>& grid) {
  CsvTable t{std::move(file), {"src\\dst"}, {}};
  for (size_t dst = 0; dst < grid.size(); ++dst) t.header.push_back(std::to_string(dst));
  for (size_t src = 0; src < grid.size(); ++src) {
    Line row{std::to_string(src)};
    for (const T& v : grid[src]) row.push_back(num(v));
    t.rows.push_back(std::move(row));
  }
  return t;
}

CsvTable runTable(const RunSummary& s);
// One column of text lines: problems.csv.
CsvTable linesTable(std::string file, std::string column, const std::vector<std::string>& lines);
std::vector<rows::OverlapStepRow> stepsOf(const OverlapRow& o);
CsvTable cudaSyncStreamsTable(const std::vector<CudaSyncRow>& list);
CsvTable heatmapTable(const LatenessHeatmap& h);
CsvTable bandwidthSeriesTable(const BandwidthSeries& s);

}  // namespace commtrace::report::csv
