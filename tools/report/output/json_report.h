// `commtrace report --format json`: the whole Report as one JSON document, schema
// "commtrace.report.v1", documented field by field in tools/report/SCHEMA.md.
#pragma once

#include <ostream>

#include "tools/report/report.h"

namespace commtrace::report {

inline constexpr const char* kReportSchema = "commtrace.report.v1";

void writeJson(const Report& report, std::ostream& out);

}  // namespace commtrace::report
