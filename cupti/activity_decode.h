// One CUPTI activity record as the fixed-size record the rings carry. Runs on the thread
// CUPTI hands a filled buffer to, once per record: no allocation, no lock.
#pragma once

#include <cupti.h>

#include "core/record.h"

namespace commtrace::cupti {

// KernelActivityRecord::activity values.
inline constexpr uint8_t kKernel = 1, kMemcpy = 2, kMemset = 3;

// false for the kinds the face does not keep.
bool decodeActivity(const CUpti_Activity& activity, KernelActivityRecord& out);

}  // namespace commtrace::cupti
