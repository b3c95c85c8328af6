// The run in a few numbers (files, ranks, hosts, ops, drops, what was wrong with the
// input) and one row per communicator: the head of every report format.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tools/report/load/run_model.h"
#include "tools/report/load/run_summary_rows.h"

namespace commtrace::report {

// instances: collective instances per communicator (indexed as run.comms), as the stream
// counted them; the overloads without it count run.collectives.
RunSummary summarizeRun(const RunModel& run, std::span<const uint64_t> instances, uint64_t transfers);
RunSummary summarizeRun(const RunModel& run);

// In the run's communicator order (restart generation, then id).
std::vector<CommunicatorRow> communicatorRows(const RunModel& run, std::span<const uint64_t> instances);
std::vector<CommunicatorRow> communicatorRows(const RunModel& run);

}  // namespace commtrace::report
