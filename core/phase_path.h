// The NVTX path open on the calling thread, as an id of the process's path tree
// (PhasePathRecord): the NVTX face sets it at every push and pop of a range; the NCCL faces
// read it as an op is issued, so each op carries where in the program it came from for the
// price of a thread-local load. 0: no range is open (or NVTX is not in use).
#pragma once

#include <cstdint>

namespace commtrace {

inline constinit thread_local uint32_t tl_phase_path __attribute__((tls_model("initial-exec"))) = 0;

inline uint32_t currentPhasePath() { return tl_phase_path; }

}  // namespace commtrace
