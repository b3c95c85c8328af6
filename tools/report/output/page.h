// A page people read: the text report and the HTML page spell the same content. Each
// section says once what it shows (report_sections.cc: titles, tables, notes, charts) and a
// page decides how: the terminal shows a few rows of each table and draws no chart, the
// HTML page shows every row and draws the charts.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tools/report/output/table.h"

namespace commtrace::report {

// How many of a table's rows a page that stops early (the terminal) shows.
enum class Rows {
  kRanking,    // the first few: the rows are ranked, most telling first
  kInventory,  // a screenful: a list to look through
  kDetail,     // none: only pages that show everything have it
};

// The rows a page that stops early shows of a table (the terminal's, a Markdown page's).
constexpr size_t shownRows(Rows rows) { return rows == Rows::kRanking ? 10 : rows == Rows::kInventory ? 20 : 0; }

// What such a page says at its end about what it left out.
constexpr std::string_view kWhereTheRestIs = "Every row of every table, each rank's kernels and clock fits, and the charts: --format html, json or csv";

using PageFields = std::vector<std::pair<std::string, std::string>>;  // "name: value" lines

class Page {
 public:
  virtual ~Page() = default;

  // A section: id is its stable anchor (no counts in it), about a clause on what it shows
  // ("" for none). A page may leave out a section that gives it nothing to show.
  virtual void section(std::string_view id, const std::string& title, const std::string& about) = 0;
  virtual void subsection(const std::string& title) = 0;
  // when_empty: the sentence saying why there are no rows.
  virtual void table(const Table& table, Rows rows, const std::string& when_empty) = 0;
  virtual void numbered(const std::vector<std::string>& items, const std::string& when_empty) = 0;
  virtual void fields(const PageFields& fields) = 0;
  // A heading and its lines (names from the files, shown as they are).
  virtual void lines(const std::string& heading, const std::vector<std::string>& items, Rows rows) = 0;
  virtual void note(const std::string& line) = 0;
  // An SVG chart, built only by a page that draws (a 1,024-rank heatmap is not free).
  virtual void chart(const std::function<std::string()>& svg) = 0;
};

}  // namespace commtrace::report
