// The ground truth's file name in the driver's --out directory: all that `commtrace demo`,
// which runs the driver as a program of its own, needs to know of the driver's code.
#pragma once

namespace commtrace::driver {

inline constexpr const char* kGroundTruthFile = "ground-truth.json";

}  // namespace commtrace::driver
