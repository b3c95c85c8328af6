// CUPTI reports kernel names as the compiler mangled them ("_ZN7cutlass7Kernel2I...E"); the
// report and the export show them as C++ reads (what Nsight and PyTorch's profiler show).
#pragma once

#include <string>
#include <string_view>

namespace commtrace::report {

// An Itanium-mangled name demangled; any other name, or one that does not demangle, as it is.
std::string demangled(std::string_view name);

}  // namespace commtrace::report
