// The flusher's report of what NCCL has in flight (FlusherOptions::before_drain, through the
// library): an op's record is written at its completion, which a hung op never reaches, so
// without this a hang and a quiet spell look alike in the file. Once a second the pool is
// scanned, and for every communicator whose oldest op has been in flight for a second or more
// an InFlightRecord goes into the flusher thread's own ring; a communicator reported before
// that has nothing stuck any more gets one record with in_flight = 0. Never a caller's thread:
// the scan reads 8,192 slot tags (5 us on the dev VM: plugin_bench BM_InFlightScan).
#pragma once

#include <cstdint>

namespace commtrace::plugin {

inline constexpr uint64_t kInFlightReportPeriodNs = 1'000'000'000;
inline constexpr uint64_t kStuckAfterNs = 1'000'000'000;  // younger ops are normal traffic

// Scans when a period has passed since the last scan (now_ns: the CPU clock of records).
// One thread at a time (the flusher's).
void reportOpsInFlight(uint64_t now_ns);

}  // namespace commtrace::plugin
