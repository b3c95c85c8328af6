// report_load_bench RUN_DIR: times what `commtrace report` does before its analyses:
// loadRun (read, decode, join) and alignClocks, and prints the model's size and the
// process's peak RSS. Used by bench/report_scaling.sh; a plain program because one run of
// a multi-GB directory is the measurement.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <iostream>

#include "tools/report/load/clock_align.h"
#include "tools/report/load/run_loader.h"

namespace {

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

long peakRssMb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024;  // Linux reports KiB
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s RUN_DIR\n", argv[0]);
    return 2;
  }
  using commtrace::report::RunModel;
  RunModel run;
  const auto start = std::chrono::steady_clock::now();
  if (!commtrace::report::loadRun({{argv[1]}, false}, run, std::cerr)) return 1;
  const double load_s = secondsSince(start);
  const long load_rss_mb = peakRssMb();
  const auto align_start = std::chrono::steady_clock::now();
  const auto clocks = commtrace::report::alignClocks(run);
  const double align_s = secondsSince(align_start);
  uint64_t member_records = 0;
  for (const auto& m : run.members) member_records += m.process >= 0;
  std::printf("processes %zu  comms %zu  instances %zu  member records %llu (slots %zu of %zu reserved)  transfers %zu\n",
              run.processes.size(), run.comms.size(), run.collectives.size(),
              static_cast<unsigned long long>(member_records), run.members.size(), run.members.capacity(),
              run.transfers.size());
  std::printf("load %.2f s (peak RSS %ld MB)  align %.2f s  total %.2f s  peak RSS %ld MB  clock residual p50 %.2f us max %.2f us\n",
              load_s, load_rss_mb, align_s, secondsSince(start), peakRssMb(), clocks.summary.residual_us_p50,
              clocks.summary.residual_us_max);
  return 0;
}
