// `commtrace report` for a terminal: the sections of report_sections.h as page.h's text
// page, the top findings first. Long tables stop after a few rows and say how many more the
// JSON and CSV formats hold; charts and per-rank detail are left to the other formats.
#pragma once

#include <ostream>

#include "tools/report/report.h"

namespace commtrace::report {

void writeText(const Report& report, std::ostream& out);

}  // namespace commtrace::report
