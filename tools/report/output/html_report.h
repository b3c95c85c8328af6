// `commtrace report --format html`: one self-contained page (inline CSS and SVG, no script,
// nothing fetched when opened): findings, the communication matrix as a heatmap, lateness
// per rank over time as a heatmap, busBw against message size per collective, and every table.
#pragma once

#include <ostream>

#include "tools/report/report.h"

namespace commtrace::report {

void writeHtml(const Report& report, std::ostream& out);

}  // namespace commtrace::report
