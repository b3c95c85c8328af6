// The report's JSON pieces: the document writer that streams it, a row as its declaration
// (report_rows.h) says, and the sections whose shape is not a list of rows. The sections
// (report_sections.h) put them in order.
#pragma once

#include <algorithm>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "tools/report/output/report_rows.h"
#include "tools/report/report.h"

namespace commtrace::report::json {

using Json = nlohmann::ordered_json;

Json valueJson(const rows::Value& value);

// A row as its declaration says: a field its row cannot give is null, or left out where the
// declaration says so.
template <class Row>
Json rowJson(const rows::Fields<Row>& fields, const Row& row) {
  Json out = Json::object();
  for (const rows::Field<Row>& f : fields) {
    const rows::Value v = f.value(row);
    if (f.presence == rows::Presence::kOnlyWhenKnown && std::holds_alternative<std::monostate>(v)) continue;
    out[std::string(f.key)] = valueJson(v);
  }
  return out;
}

// An array of rows, each as its declaration says.
template <class Row>
Json rowsJson(const rows::Fields<Row>& fields, const std::vector<Row>& list) {
  Json out = Json::array();
  for (const Row& row : list) out.push_back(rowJson(fields, row));
  return out;
}

// A figure that could not be measured is null, never 0.
inline Json orNull(bool known, double value) { return known ? Json(value) : Json(nullptr); }

Json runJson(const RunSummary& s);
Json clocksJson(const ClockSummary& c);
Json bandwidthSeriesRowJson(const BandwidthSeriesRow& r);
Json matrixSliceJson(const MatrixSlice& s, size_t max_cells);  // the heaviest max_cells cells, in their order
Json overlapRowJson(const OverlapRow& o, bool with_steps);
Json kernelsJson(const KernelBreakdown& k);
Json cudaSyncRowJson(const CudaSyncRow& r);
Json heatmapJson(const LatenessHeatmap& h);

// A run wider than kWideRanks ranks keeps the JSON to what a program needs without the parts
// that grow with ranks x steps, ranks x time bins or communicators x ranks (every part is
// in the CSV tables): the per-step overlap of the kWideKept ranks with most exposed
// communication (else most communication), the lateness of consecutive ranks as one row (each
// cell the largest), the kWideKept per-communicator matrix slices that moved most bytes, and
// in each slice the kWideRanks rank pairs that moved most. At 16,384 ranks the JSON was
// 308 MB, these parts 170 MB of it.
inline constexpr size_t kWideRanks = 1024;
inline constexpr size_t kWideKept = 64;
// Whether overlap[i] keeps its steps.
std::vector<bool> overlapWithSteps(const std::vector<OverlapRow>& overlap);
// The slices the JSON keeps, in their order, and how many cells of each at most.
std::vector<const MatrixSlice*> keptSlices(const CommMatrix& matrix);
size_t keptCells(const CommMatrix& matrix);

// A value as the report lays JSON out, its lines indented for `depth`: a row (an array of
// scalars only, or such an object in an array: a table row, a heatmap row) on one line unless
// it holds a sentence, anything else a member a line, two spaces a level. A wide run's JSON
// is mostly rows: a line each halves the file against a number a line, and a row reads as one.
void writeLaidOut(std::ostream& out, const Json& value, int depth, bool in_array = false);

// Writes a JSON object exactly as writeLaidOut() writes it, one field at a time, and an
// array field one element at a time: only one element is ever held as a document. (The
// report of a 1,024-rank run as one document took some 400 MB to print 100 MB.)
class PrettyObject {
 public:
  PrettyObject(std::ostream& out, int depth) : out_(out), depth_(depth) {}

  void field(std::string_view key, const Json& value) {
    openField(key);
    write(value, depth_ + 1, false);
  }
  // element(row) -> Json for each of `rows`, in order.
  template <class Rows, class Element>
  void array(std::string_view key, const Rows& rows, Element element) {
    openField(key);
    if (rows.empty()) {
      out_ << "[]";
      return;
    }
    out_ << '[';
    bool first = true;
    for (const auto& row : rows) {
      out_ << (first ? "\n" : ",\n") << indent(depth_ + 2);
      first = false;
      write(element(row), depth_ + 2, true);
    }
    out_ << '\n' << indent(depth_ + 1) << ']';
  }
  // fill(PrettyObject&) writes the nested object's fields.
  template <class Fill>
  void object(std::string_view key, Fill fill) {
    openField(key);
    PrettyObject inner(out_, depth_ + 1);
    fill(inner);
    inner.close();
  }
  void close() { out_ << (first_ ? "{}" : "\n" + indent(depth_) + "}"); }

 private:
  static std::string indent(int depth) { return std::string(static_cast<size_t>(2 * depth), ' '); }
  void openField(std::string_view key) {
    out_ << (first_ ? "{\n" : ",\n") << indent(depth_ + 1) << '"' << key << "\": ";
    first_ = false;
  }
  void write(const Json& value, int depth, bool in_array) { writeLaidOut(out_, value, depth, in_array); }

  std::ostream& out_;
  const int depth_;
  bool first_ = true;
};


}  // namespace commtrace::report::json
