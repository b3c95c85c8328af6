// The report's sections, declared once, in the order the JSON document has them: each with
// its JSON field(s) and its CSV table(s) (a section may have none of either: the schema name
// is no table, the run's problems no JSON field of their own). The JSON and CSV writers
// iterate them; a new section is an entry here, its rows declared in report_rows.cc.
#pragma once

#include <functional>
#include <string_view>
#include <vector>

#include "tools/report/output/csv_tables.h"
#include "tools/report/output/json_parts.h"
#include "tools/report/report.h"

namespace commtrace::report {

using CsvOut = std::function<void(const csv::CsvTable&)>;

struct ReportSection {
  std::string_view key;
  std::function<void(json::PrettyObject& doc, const Report& r)> json;  // writes its field(s)
  // Hands over its tables one at a time (each freed before the next: a 1,024-rank report's
  // tables built at once held some 600 MB of cells); empty: none.
  std::function<void(const Report& r, const CsvOut& out)> csv;
};

const std::vector<ReportSection>& reportSections();

}  // namespace commtrace::report
