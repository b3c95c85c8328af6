// `commtrace report --format csv --out DIR`: one RFC 4180 file per table of the Report
// (bandwidth.csv, matrix_bytes.csv, stragglers.csv, ...), for spreadsheets and pandas.
// Columns are named as the JSON fields (tools/report/SCHEMA.md); lists of ranks are one
// cell, space-separated; a value that is not known is an empty cell.
#pragma once

#include <ostream>
#include <string>

#include "tools/report/report.h"

namespace commtrace::report {

// Creates dir if needed. false (and a "commtrace:" line on err) when a file cannot be written.
bool writeCsv(const Report& report, const std::string& dir, std::ostream& err);

}  // namespace commtrace::report
