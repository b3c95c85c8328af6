#include "core/string_table.h"

#include <cstring>

#include "core/fnv1a.h"

namespace commtrace {
namespace {

// FNV-1a, forced away from the two reserved states.
uint64_t hashOf(std::string_view s) { return fnv1a(s) | 2; }

}  // namespace

StringTable& StringTable::global() {
  // Constant-initialised into .bss: pages are touched only as strings arrive.
  static constinit StringTable table;
  return table;
}

StringId StringTable::intern(const char* s) {
  if (s == nullptr) return 0;
  return intern(std::string_view(s, strnlen(s, kMaxLength)));
}

StringId StringTable::intern(std::string_view s) {
  if (s.size() > kMaxLength) s = s.substr(0, kMaxLength);
  if (s.empty()) return 0;
  const uint64_t hash = hashOf(s);
  for (uint32_t probe = 0; probe < kSlots; ++probe) {
    const uint32_t index = static_cast<uint32_t>((hash + probe) & (kSlots - 1));
    Slot& slot = slots_[index];
    uint64_t state = slot.state.load(std::memory_order_acquire);
    if (state == 0) {
      if (slot.state.compare_exchange_strong(state, kClaimed, std::memory_order_acquire)) {
        return publish(index, hash, s);
      }
    }
    if (state == hash && slot.length == s.size() &&
        std::memcmp(arena_ + slot.offset, s.data(), s.size()) == 0) {
      return index + 1;
    }
  }
  overflows_.fetch_add(1, std::memory_order_relaxed);
  return kOverflowId;
}

StringId StringTable::publish(uint32_t index, uint64_t hash, std::string_view s) {
  Slot& slot = slots_[index];
  const uint32_t offset = arena_used_.fetch_add(static_cast<uint32_t>(s.size()), std::memory_order_relaxed);
  if (offset + s.size() > kArenaBytes) {
    // The slot stays claimed (never matches, never reused): the arena is the limit.
    overflows_.fetch_add(1, std::memory_order_relaxed);
    return kOverflowId;
  }
  std::memcpy(arena_ + offset, s.data(), s.size());
  slot.offset = offset;
  slot.length = static_cast<uint32_t>(s.size());
  slot.state.store(hash, std::memory_order_release);
  return index + 1;
}

std::string_view StringTable::lookup(StringId id) const {
  if (id == 0) return {};
  if (id == kOverflowId || id > kSlots) return "<string table full>";
  const Slot& slot = slots_[id - 1];
  if (slot.state.load(std::memory_order_acquire) <= kClaimed) return {};
  return {arena_ + slot.offset, slot.length};
}

}  // namespace commtrace
