// Process-wide, lock-free string interning for record fields. Faces intern NCCL's func,
// datatype, algorithm and protocol names, comm names and kernel names on the hot path;
// the flusher resolves ids when it writes a chunk. Storage is static and fixed, so
// interning never allocates; a full table answers kOverflowId and counts the miss.
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

#include "core/record.h"

namespace commtrace {

class StringTable {
 public:
  static constexpr uint32_t kSlots = 1u << 14;       // distinct strings
  static constexpr uint32_t kArenaBytes = 1u << 20;  // their characters
  static constexpr uint32_t kMaxLength = 255;        // longer strings are truncated
  static constexpr StringId kOverflowId = kSlots + 1;

  // Returns the id of s (NULL interns as the empty string, id 0). Lock-free, no allocation;
  // two threads racing on a new string may get two ids for it, which readers treat alike.
  StringId intern(const char* s);
  StringId intern(std::string_view s);

  // The text of an id this table returned; "" for 0, "<string table full>" for overflow.
  std::string_view lookup(StringId id) const;

  uint64_t overflowCount() const { return overflows_.load(std::memory_order_relaxed); }

  // The one table of this process.
  static StringTable& global();

 private:
  struct Slot {
    std::atomic<uint64_t> state{0};  // 0 empty, kClaimed being written, else the hash (ready)
    uint32_t offset = 0;
    uint32_t length = 0;
  };
  static constexpr uint64_t kClaimed = 1;

  StringId publish(uint32_t index, uint64_t hash, std::string_view s);

  Slot slots_[kSlots];
  char arena_[kArenaBytes] = {};
  std::atomic<uint32_t> arena_used_{0};
  std::atomic<uint64_t> overflows_{0};
};

// The id of a fixed name, interned at its first use and cached in `cache` (a constinit
// atomic, 0 until then): later calls are one relaxed load, with no static's init guard.
inline StringId internOnce(std::atomic<StringId>& cache, std::string_view text) {
  StringId id = cache.load(std::memory_order_relaxed);
  if (id == 0) [[unlikely]] {
    id = StringTable::global().intern(text);
    cache.store(id, std::memory_order_relaxed);
  }
  return id;
}

}  // namespace commtrace
