// The handles cuda_sync_caller passes to the CUDA runtime, shared with the test that checks
// what libcommtrace.so recorded. The fake runtime never dereferences them.
#pragma once

#include <cstdint>

namespace commtrace::testing::cuda_sync_caller {

inline constexpr uintptr_t kStreamA = 0x5a000;
inline constexpr uintptr_t kStreamB = 0x5b000;
inline constexpr uintptr_t kEventA = 0xea000;
inline constexpr uintptr_t kEventB = 0xeb000;

}  // namespace commtrace::testing::cuda_sync_caller
