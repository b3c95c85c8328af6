// How a kind of output row is declared once (report_rows.h) and printed everywhere: each
// field's key (the JSON field and the CSV column), its type, its meaning (SCHEMA.md's field
// tables), how it reads from the Report's row, and whether and how people see it in the
// text and HTML tables. The JSON, CSV, text and HTML writers print rows only through these
// declarations, and schema_doc_test holds SCHEMA.md to them: a field is added in one place.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "tools/report/output/table.h"

namespace commtrace::report::rows {

// What JSON and CSV print: null (not measured), a flag, a count, a figure, a text, a rank list.
using Value = std::variant<std::monostate, bool, int64_t, uint64_t, double, std::string, std::vector<int>>;

enum class Kind { kInteger, kNumber, kString, kBool, kRankList };

// Where a row cannot give a field: it never happens; the field is null; the field is left
// out of the JSON row (an empty CSV cell, "-" for people) and its meaning says when.
enum class Presence { kAlways, kOrNull, kOnlyWhenKnown };

template <class Row>
struct Field {
  std::string_view key;
  Kind kind;
  Presence presence;
  std::string_view meaning;
  std::function<Value(const Row&)> value;  // std::monostate where the row cannot give it
  // The text and HTML column: its header ("": people do not see the field) and, where the
  // spelling of the key's unit (peopleCell) does not say it right, the cell.
  std::string_view header;
  std::function<std::string(const Row&)> shown;
};

template <class Row>
using Fields = std::vector<Field<Row>>;

// A member as a field's value.
template <class Row, class T>
std::function<Value(const Row&)> member(T Row::*m) {
  return [m](const Row& row) { return Value(row.*m); };
}

// The fields of a part of Row (CudaSyncCallRow::stats) as fields of Row.
template <class Row, class Part>
Fields<Row> through(Part Row::*part, const Fields<Part>& fields) {
  Fields<Row> out;
  for (const Field<Part>& f : fields) {
    Field<Row> lifted{f.key, f.kind, f.presence, f.meaning, [part, get = f.value](const Row& row) { return get(row.*part); }, f.header};
    if (f.shown) lifted.shown = [part, show = f.shown](const Row& row) { return show(row.*part); };
    out.push_back(std::move(lifted));
  }
  return out;
}

// A value as people read it, in the unit a word of its key names (SCHEMA.md's conventions):
// us a duration (time_us_p50), gbs GB/s, bytes a size, fraction and pct a percentage; null
// "-", flags yes/no, rank lists collapsed.
std::string peopleCell(std::string_view key, const Value& value);
// As a CSV cell: null empty, flags true/false, rank lists space-separated, doubles the
// shortest text that reads back as the same number.
std::string csvCell(const Value& value);
// SCHEMA.md's type column: "integer", "number or null", "[integer]", ...
std::string typeName(Kind kind, Presence presence);

template <class Row>
std::string shownCell(const Field<Row>& field, const Row& row) {
  return field.shown ? field.shown(row) : peopleCell(field.key, field.value(row));
}

// The text and HTML columns of a row: the fields with a header, in declaration order;
// numbers right-aligned.
template <class Row>
std::vector<Table::Column> peopleColumns(const Fields<Row>& fields) {
  std::vector<Table::Column> columns;
  for (const Field<Row>& f : fields)
    if (!f.header.empty())
      columns.push_back({std::string(f.header), f.kind == Kind::kInteger || f.kind == Kind::kNumber ? Table::Align::kRight : Table::Align::kLeft});
  return columns;
}

template <class Row>
std::vector<std::string> peopleCells(const Fields<Row>& fields, const Row& row) {
  std::vector<std::string> cells;
  for (const Field<Row>& f : fields)
    if (!f.header.empty()) cells.push_back(shownCell(f, row));
  return cells;
}

template <class Row>
Table peopleTable(const Fields<Row>& fields, const std::vector<Row>& rows) {
  Table table{peopleColumns(fields), {}};
  for (const Row& row : rows) table.rows.push_back(peopleCells(fields, row));
  return table;
}

template <class Row>
std::vector<std::string> csvHeader(const Fields<Row>& fields) {
  std::vector<std::string> header;
  for (const Field<Row>& f : fields) header.emplace_back(f.key);
  return header;
}

template <class Row>
std::vector<std::string> csvCells(const Fields<Row>& fields, const Row& row) {
  std::vector<std::string> cells;
  for (const Field<Row>& f : fields) cells.push_back(csvCell(f.value(row)));
  return cells;
}

// The fields named by keys, in that order: a parent row's columns in front of its parts'
// rows in a long-format CSV file (the rank in front of each of its steps).
template <class Row>
Fields<Row> pick(const Fields<Row>& fields, std::initializer_list<std::string_view> keys) {
  Fields<Row> out;
  for (std::string_view key : keys)
    for (const Field<Row>& f : fields)
      if (f.key == key) out.push_back(f);
  return out;
}

// SCHEMA.md's field table: "| field | type | meaning |", its rule line, one line per field.
template <class Row>
std::string markdownTable(const Fields<Row>& fields) {
  std::string out = "| field | type | meaning |\n|---|---|---|\n";
  for (const Field<Row>& f : fields)
    out += "| `" + std::string(f.key) + "` | " + typeName(f.kind, f.presence) + " | " + std::string(f.meaning) + " |\n";
  return out;
}

}  // namespace commtrace::report::rows
