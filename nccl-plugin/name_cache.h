// NCCL's func, datatype, algorithm and protocol names are string literals in libnccl
// (ncclFuncToString and friends), so the same pointer always names the same text. A
// pointer-keyed cache turns the hot path's interning into one load and one compare.
#pragma once

#include <atomic>
#include <cstdint>

#include "core/string_table.h"

namespace commtrace::plugin {

class NameCache {
 public:
  StringId intern(const char* name) {
    if (name == nullptr) return 0;
    const uint64_t key = reinterpret_cast<uint64_t>(name);
    std::atomic<uint64_t>& entry = entries_[(key >> 3) & (kEntries - 1)];
    const uint64_t cached = entry.load(std::memory_order_relaxed);
    if (cached >> kIdBits == key) return static_cast<StringId>(cached & kIdMask);
    const StringId id = StringTable::global().intern(name);
    // One word per entry: racing writers leave a consistent (pointer, id) pair.
    if (key < (uint64_t{1} << (64 - kIdBits))) entry.store(key << kIdBits | id, std::memory_order_relaxed);
    return id;
  }

  static NameCache& global();

 private:
  static constexpr int kIdBits = 16;  // StringTable ids fit (kSlots + 1 < 2^16)
  static constexpr uint64_t kIdMask = (uint64_t{1} << kIdBits) - 1;
  static constexpr uint32_t kEntries = 256;
  static_assert(StringTable::kOverflowId <= kIdMask);
  std::atomic<uint64_t> entries_[kEntries] = {};
};

}  // namespace commtrace::plugin
