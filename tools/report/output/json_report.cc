#include "tools/report/output/json_report.h"

#include "tools/report/output/report_sections.h"

namespace commtrace::report {

void writeJson(const Report& r, std::ostream& out) {
  json::PrettyObject doc(out, 0);
  for (const ReportSection& section : reportSections())
    if (section.json) section.json(doc, r);
  doc.close();
  out << '\n';
}

}  // namespace commtrace::report
