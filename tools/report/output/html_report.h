// `commtrace report --format html`: one self-contained page (inline CSS and SVG, no script,
// nothing fetched when opened): the sections of report_sections.h, as the text report has
// them, with every table to its 1,000th row and the charts (report_charts.h: at most 128
// rows each, so that a 16,384-rank run's page stays a few MB).
#pragma once

#include <ostream>

#include "tools/report/report.h"

namespace commtrace::report {

void writeHtml(const Report& report, std::ostream& out);

}  // namespace commtrace::report
