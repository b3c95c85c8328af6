// The clocks every record carries (vDSO reads, no syscall): CLOCK_MONOTONIC for CPU times,
// CLOCK_REALTIME only to anchor a file to wall time. GPU (NCCL pTimer) and CUPTI times
// are mapped onto CLOCK_MONOTONIC by the clock samples the flusher records.
#pragma once

#include <cstdint>

namespace commtrace {

// CLOCK_MONOTONIC in ns: the CPU clock of every record. Where the kernel keeps time by the
// TSC, read from the TSC once the flusher has calibrated it (core/tsc_clock.h): ~10 ns
// instead of the vDSO's ~25 on a VM, within a few hundred ns of CLOCK_MONOTONIC itself.
uint64_t nowNs();

// CLOCK_REALTIME in ns.
uint64_t realtimeNs();

}  // namespace commtrace
