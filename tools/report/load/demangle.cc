#include "tools/report/load/demangle.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

namespace commtrace::report {

std::string demangled(std::string_view name) {
  if (!name.starts_with("_Z")) return std::string(name);
  const std::string mangled(name);  // NUL-terminated for the ABI call
  int status = 0;
  const std::unique_ptr<char, decltype(&std::free)> text(abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status),
                                                         &std::free);
  return status == 0 && text != nullptr ? std::string(text.get()) : mangled;
}

}  // namespace commtrace::report
