#include "tools/diff_command.h"

#include <fstream>

#include "tools/report/analyses/run_diff.h"
#include "tools/report/output/run_diff_output.h"

namespace commtrace::tools {

int runDiff(const DiffOptions& options, std::ostream& out, std::ostream& err) {
  report::Report a, b;
  for (const auto& [path, r] : {std::pair<const std::string&, report::Report&>{options.run_a, a}, {options.run_b, b}}) {
    if (!analyseRun({.paths = {path}, .job = options.job, .progress = options.progress}, r, err)) {
      err << "commtrace: diff: " << path << " could not be analysed\n";
      return 1;
    }
  }
  const report::RunDiff d = report::diffReports(a, b);
  for (const std::string& w : d.warnings) err << "commtrace: diff: " << w << '\n';
  std::ofstream file;
  if (!options.out.empty()) file.open(options.out, std::ios::trunc);
  std::ostream& to = options.out.empty() ? out : file;
  if (options.json) report::writeDiffJson(d, options.run_a, options.run_b, to);
  else report::writeDiffText(d, options.run_a, options.run_b, to);
  if (!options.out.empty()) {
    file.close();
    if (!file) {
      err << "commtrace: " << options.out << ": cannot write the diff there\n";
      return 1;
    }
    out << "Wrote " << options.out << '\n';
  }
  return 0;
}

}  // namespace commtrace::tools
