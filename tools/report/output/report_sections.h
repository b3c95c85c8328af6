// The report's sections, declared once, in one order (the JSON document's, the pages'):
// each with its JSON field(s), its CSV table(s) and what it shows people (page.h), any of
// which it may lack (the schema name is no table and on no page, the run's problems no
// JSON field of their own). Every format iterates them; a new section is an entry here,
// its rows declared in report_rows.cc.
#pragma once

#include <functional>
#include <string_view>
#include <vector>

#include "tools/report/output/csv_tables.h"
#include "tools/report/output/json_parts.h"
#include "tools/report/output/page.h"
#include "tools/report/report.h"

namespace commtrace::report {

using CsvOut = std::function<void(const csv::CsvTable&)>;

struct ReportSection {
  std::string_view key;
  std::string_view type, meaning;  // of its JSON field, as SCHEMA.md's top-level table has them
  std::function<void(json::PrettyObject& doc, const Report& r)> json;  // writes its field(s)
  // Hands over its tables one at a time (each freed before the next: a 1,024-rank report's
  // tables built at once held some 600 MB of cells); empty: none.
  std::function<void(const Report& r, const CsvOut& out)> csv;
  std::function<void(const Report& r, Page& page)> page;  // page_parts.h; empty: on no page
  // A list of declared rows: their field table as SCHEMA.md holds it under
  // "<!-- fields: KEY[] -->" (report_rows_test), built when asked (a report never does);
  // empty for other sections.
  std::function<std::string()> fields_markdown;
};

// Every section's page part, in order: what the text report and the HTML page iterate.
void writePage(const Report& r, Page& page);

const std::vector<ReportSection>& reportSections();

}  // namespace commtrace::report
