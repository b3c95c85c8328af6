// `commtrace report --format markdown`: the text report's content as GitHub-flavoured
// Markdown, for a pull request, an issue or a CI job's summary page ($GITHUB_STEP_SUMMARY):
// the sections of report_sections.h with headings and tables, a table's first rows as the
// terminal shows them, no charts. Every text from the files is escaped, so a communicator
// named "a|b" or "*x*" stays one cell of plain text.
#pragma once

#include <ostream>

#include "tools/report/report.h"

namespace commtrace::report {

void writeMarkdown(const Report& report, std::ostream& out);

}  // namespace commtrace::report
