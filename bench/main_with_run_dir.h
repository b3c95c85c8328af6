// The main() of benchmarks that run a real Flusher: a temporary run directory for its
// files, removed when the benchmarks are done.
#pragma once

#include <benchmark/benchmark.h>

#include <string>

#include "tests/support/temp_dir.h"

namespace commtrace::bench {

inline int mainWithRunDir(int argc, char** argv, std::string& run_dir) {
  const testutil::TempDir dir;
  run_dir = dir.path();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace commtrace::bench
