// `commtrace ARGS` as a user runs it, in a scratch directory: the CLI tests' one way to call
// it. COMMTRACE_CLI, the binary's path, comes from each test's build definitions.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tests/support/run_program.h"
#include "tests/support/temp_dir.h"

namespace commtrace::testutil {

inline ProgramResult commtrace(const TempDir& scratch, std::vector<std::string> args) {
  args.insert(args.begin(), COMMTRACE_CLI);
  return runProgram(std::move(args), scratch.path());
}

}  // namespace commtrace::testutil
