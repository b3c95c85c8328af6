// `commtrace diff RUN_A RUN_B`: both runs analysed as `commtrace report` would, then what
// changed between them (report/analyses/run_diff.h), as text or JSON.
#pragma once

#include <ostream>
#include <string>

#include "tools/report_command.h"

namespace commtrace::tools {

struct DiffOptions {
  std::string run_a, run_b;  // run directories or trace files
  std::string job;           // which job of each, where a directory holds several (LoadOptions::job)
  bool json = false;
  std::string out;  // a file; empty: stdout
  ProgressMode progress = ProgressMode::kAuto;
};

// 0 when both runs were analysed and the diff written; 1 when either could not be read or
// the output not written (err says why).
int runDiff(const DiffOptions& options, std::ostream& out, std::ostream& err);

}  // namespace commtrace::tools
