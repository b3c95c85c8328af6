// `commtrace report --format html`: one self-contained page (inline CSS and SVG, no script,
// nothing fetched when opened): the sections of report_sections.h, as the text report has
// them, with every row of every table and the charts (report_charts.h).
#pragma once

#include <ostream>

#include "tools/report/report.h"

namespace commtrace::report {

void writeHtml(const Report& report, std::ostream& out);

}  // namespace commtrace::report
