// Advice: what to try, each line with the measured numbers that call for it, from the
// report's own tables (never advice without its evidence):
// - another NCCL algorithm or protocol where one measured faster for the same func and size
//   on the same communicator;
// - fewer, larger collectives where many small ones a step run far below the bandwidth the
//   same communicator reached with large ones;
// - overlap, where a rank's exposed communication is a large share of its step (how, by the
//   parallelism recognised);
// - a host or link to check or drain when it is the culprit, and where to look for a
//   straggler by its class.
#pragma once

#include <vector>

#include "tools/report/report.h"

namespace commtrace::report {

// r: the report with its tables, parallelism and findings built. steps: the job's steps (the
// median rank's count; per-step figures need two or more).
std::vector<AdviceRow> adviceFor(const Report& r, double steps);

}  // namespace commtrace::report
