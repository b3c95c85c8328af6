// `commtrace demo`: a simulated 8-rank, 2-node job played through the real libcommtrace.so
// by the NCCL driver, then a summary of the files it wrote and what was planted in it.
#pragma once

#include <ostream>
#include <string>

namespace commtrace::tools {

struct DemoOptions {
  std::string dir = "commtrace-demo";  // wiped first if it holds only demo files
  std::string scenario;                // empty: the built-in demo.json
  std::string plugin;                  // empty: ../lib/libcommtrace.so next to this binary
  int profiler_version = 0;            // 4..7: bind only ncclProfiler_v<N>
  std::string program = "commtrace";   // as the user ran it (argv[0]): the "Next:" commands must run as printed
};

// Returns the process exit code: 0, 1 when the job or its files failed, 2 for a bad scenario.
int runDemo(const DemoOptions& options, std::ostream& out, std::ostream& err);

}  // namespace commtrace::tools
