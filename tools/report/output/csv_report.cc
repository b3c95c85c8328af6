#include "tools/report/output/csv_report.h"

#include <filesystem>
#include <fstream>

#include "tools/report/output/report_sections.h"

namespace commtrace::report {

bool writeCsv(const Report& report, const std::string& dir, std::ostream& err) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    err << "commtrace: " << dir << ": cannot create the CSV directory: " << ec.message() << '\n';
    return false;
  }
  bool written = true;
  const CsvOut write = [&](const csv::CsvTable& t) {
    if (!written) return;
    const std::string path = (std::filesystem::path(dir) / t.file).string();
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    csv::writeRow(t.header, out);
    for (const csv::Line& row : t.rows) csv::writeRow(row, out);
    out.close();
    if (!out) err << "commtrace: " << path << ": cannot write it\n", written = false;
  };
  for (const ReportSection& section : reportSections())
    if (section.csv) section.csv(report, write);
  return written;
}

}  // namespace commtrace::report
