// FNV-1a, 64-bit: the one string hash the project uses (the string table's slots, the NCCL
// driver's and the Kineto reader's communicator ids). Header-only, so tools that use no
// other part of core need not link it.
#pragma once

#include <cstdint>
#include <string_view>

namespace commtrace {

constexpr uint64_t fnv1a(std::string_view s) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace commtrace
