// The diff of two runs (analyses/run_diff.h) for people (text) and programs (JSON, schema
// commtrace.diff.v1).
#pragma once

#include <ostream>
#include <string>

#include "tools/report/analyses/run_diff.h"

namespace commtrace::report {

void writeDiffText(const RunDiff& d, const std::string& name_a, const std::string& name_b, std::ostream& out);
void writeDiffJson(const RunDiff& d, const std::string& name_a, const std::string& name_b, std::ostream& out);

}  // namespace commtrace::report
