// Mismatches and hangs: ops some ranks recorded and others, whose files exist, never did,
// and ops started but never finished.
#pragma once

#include <cstdint>
#include <vector>

#include "tools/report/report.h"
#include "tools/report/run_model.h"

namespace commtrace::report {

constexpr size_t kMaxMismatchRows = 1000;

// Rows, at most kMaxMismatchRows: the "file ends" rows, then the others by communicator and
// seq; total: how many there were.
// - "missing": a rank with a file lacks an instance although it recorded later ops of the
//   communicator (collectives: later op indices; p2p: later transfers of the same pair).
// - "file ends": its file stops before that instance, or no readable file recorded that
//   member at all (missing, or damaged before the record naming its seat): one row per
//   (communicator, rank) naming the first instance it lacks.
// - "unfinished": a member started (GPU start, or a CPU start where other members have GPU
//   ends) but has no GPU end: a hang, or a process killed mid-op.
std::vector<MismatchRow> findMismatches(const RunModel& run, uint64_t& total);

}  // namespace commtrace::report
