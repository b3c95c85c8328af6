// `commtrace report` for a terminal: the top findings first, then the run, its communicators,
// bandwidth, stragglers, slow links, the heaviest matrix cells, mismatches and overlap.
// Long tables stop after a few rows and say how many more the JSON and CSV formats hold.
#pragma once

#include <ostream>

#include "tools/report/report.h"

namespace commtrace::report {

void writeText(const Report& report, std::ostream& out);

}  // namespace commtrace::report
