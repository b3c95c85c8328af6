// One process's own collective and point-to-point records, read back from its file alone:
// what the analyses that follow one process through its whole run (overlap's steps) need,
// without the run's ops held joined. Files are read one at a time per thread, so the memory
// is one process's ops, not the run's.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "core/record.h"
#include "tools/report/load/run_model.h"

namespace commtrace::report {

enum class OpSide : uint8_t { kCollective, kSend, kRecv };

struct OwnOp {
  uint64_t comm_id = 0;
  // The file's string id of the op's func (a transfer's API func: its parent's, 0 for a plain
  // send or receive): equal for equal names within one file, meaningless across files.
  uint32_t func = 0;
  OpSide side = OpSide::kCollective;
  uint64_t bytes = 0;
  uint64_t op_index = 0;
  uint64_t cpu_start_ns = 0;  // 0: not recorded
  uint64_t gpu_start_ns = 0;
  uint64_t gpu_end_ns = 0;
  uint32_t phase_path = 0;  // the file's PhasePath id it was issued under; 0: none
};

// A compute kernel: a kernel (not a memcpy or memset: those run on copy engines, not on the
// SMs that would hide communication) with a duration, and not NCCL's ("ncclDevKernel_*",
// "ncclKernel_*").
bool isComputeKernel(const KernelActivityRecord& k, std::string_view name);

// What readOwnRecords hands on; each may be empty.
struct OwnRecordSinks {
  std::function<void(const OwnOp&)> op;
  std::function<void(const PhaseSpan&, std::string_view name, std::string_view domain)> phase;  // an NVTX range (span.name left 0)
  std::function<void(const GpuInterval&)> compute;  // a compute kernel on the CUPTI clock (name left 0)
};

// Hands on every op record of the trace file at path, and its NVTX ranges and compute kernels
// where asked, in file order. false, with the reader's "commtrace: ..." message, when the file
// cannot be read at all; a damaged file is read as far as it goes.
bool readOwnRecords(const std::string& path, const OwnRecordSinks& sinks, std::string& error);

}  // namespace commtrace::report
