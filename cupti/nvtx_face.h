// The NVTX face: libcommtrace.so as the process's NVTX injection library. Every library
// that uses NVTX (PyTorch's torch.cuda.nvtx, NCCL's own ranges, the user's code) loads the
// library NVTX_INJECTION64_PATH names at its first NVTX call and calls its
// InitializeInjectionNvtx2, once per NVTX-using library; the constructor points that
// variable here. From then on NVTX calls land in the handlers below:
//
// - push/pop ranges become PhaseRange records with their nesting depth in their domain,
//   through a stack per thread and domain, as NVTX nests them (no lock; a thread's stacks
//   are allocated at its first push);
// - start/end ranges (which may end on another thread) go through a fixed table of open
//   ranges and are recorded with depth kUnnested;
// - marks become zero-length PhaseRange records;
// - domains and registered strings are interned names: their handles are string ids.
//
// Names are interned in the process's string table, so a record carries 4-byte ids.
#pragma once

#include <cstdint>

namespace commtrace::nvtx {

inline constexpr uint16_t kUnnested = 0xffff;  // PhaseRange.depth of a start/end range
inline constexpr uint16_t kMark = 0xfffe;      // PhaseRange.depth of a mark
inline constexpr uint32_t kMaxDepth = 64;      // deeper pushes are counted, not recorded
inline constexpr uint32_t kDomainsPerThread = 4;  // pushes in more domains on one thread: counted

// Ranges pushed deeper than kMaxDepth or in a domain past kDomainsPerThread, start/end ranges that found the open-range table
// full, and ends of ranges it did not know: counted, never recorded.
struct NvtxLosses {
  uint64_t too_deep = 0;
  uint64_t table_full = 0;
  uint64_t unknown_end = 0;
};
NvtxLosses losses();

}  // namespace commtrace::nvtx
