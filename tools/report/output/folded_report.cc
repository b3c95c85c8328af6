#include "tools/report/output/folded_report.h"

#include <cmath>
#include <string>
#include <string_view>

#include "tools/report/analyses/call_paths.h"
#include "tools/report/load/phase_path_tally.h"

namespace commtrace::report {

namespace {

// A path's frames, ';'-separated, each name kept to one frame.
std::string foldedStack(std::string_view path) {
  std::string stack;
  for (const std::string_view range : PhasePathTally::ranges(path)) {
    if (!stack.empty()) stack += ';';
    for (const char c : range) stack += c == ';' ? ':' : c == '\n' || c == '\r' ? ' ' : c;
  }
  return stack;
}

}  // namespace

const char* foldedMeasure(const Report& report) { return everyExposureKnown(report.call_paths) ? "exposed communication" : "communication"; }

void writeFolded(const Report& report, std::ostream& out) {
  const bool exposed = everyExposureKnown(report.call_paths);
  for (const CallPathRow& row : report.call_paths)
    out << foldedStack(row.path) << ' ' << static_cast<uint64_t>(std::llround(exposed ? row.exposed_us : row.comm_us)) << '\n';
}

void writeFoldedStacks(const Report& report, std::ostream& out) {
  for (const CallStackRow& row : report.call_stacks) out << row.stack << ' ' << row.ops << '\n';
}

}  // namespace commtrace::report
