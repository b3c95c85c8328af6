// Reads every trace file of a run directory into a RunModel: the processes, their
// communicators, and every collective and point-to-point op joined across ranks. Files are
// streamed chunk by chunk on loader threads (never whole); one thread joins.
#pragma once

#include <ostream>
#include <string>

#include "tools/report/run_model.h"

namespace commtrace::report {

struct LoadOptions {
  std::string dir;
  bool progress = false;  // a one-line, \r-updated progress indicator on err
};

// true when at least one file could be read. Files that are not readable traces are listed
// in run.skipped_files; damaged ones are read as far as they go and marked in their
// ProcessInfo. false (nothing to analyse) with the reasons written to err: no such
// directory, no *.ctrace file in it, or none of them readable.
bool loadRun(const LoadOptions& options, RunModel& run, std::ostream& err);

}  // namespace commtrace::report
