// The text report's section and subsection titles, in order, each cut before its
// "(what it shows)" and without the closing line: what the HTML and Markdown pages' tests
// hold their own sections to.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "tests/support/run_program.h"
#include "tools/report/output/text_report.h"

namespace commtrace::testutil {

inline std::vector<std::string> textPageTitles(const report::Report& r) {
  std::ostringstream text;
  report::writeText(r, text);
  std::vector<std::string> titles;
  std::string previous;
  for (const std::string& line : linesOf(text.str())) {
    if (previous.empty() && !line.empty() && !line.starts_with(" ")) titles.push_back(line.substr(0, line.find(" (")));
    previous = line;
  }
  if (!titles.empty()) titles.pop_back();  // the closing line: where the rest is
  return titles;
}

}  // namespace commtrace::testutil
