// Protobuf wire format, written by hand: the capture library must not link libprotobuf.
// Only what commtrace writes needs: varints, zigzag, 64-bit fixed fields (doubles, Perfetto's
// flow ids) and length-delimited fields.
#pragma once

#include <bit>
#include <cstdint>
#include <string_view>
#include <vector>

namespace commtrace::wire {

using Bytes = std::vector<uint8_t>;

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2 };

inline uint64_t zigzag(uint64_t v) {
  return (v << 1) ^ static_cast<uint64_t>(static_cast<int64_t>(v) >> 63);
}
inline uint64_t unzigzag(uint64_t v) { return (v >> 1) ^ (~(v & 1) + 1); }

inline void putVarint(Bytes& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<uint8_t>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<uint8_t>(v));
}

inline size_t varintSize(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) { v >>= 7; ++n; }
  return n;
}

inline void putTag(Bytes& out, uint32_t field, WireType type) {
  putVarint(out, (static_cast<uint64_t>(field) << 3) | type);
}

inline void putVarintField(Bytes& out, uint32_t field, uint64_t v) {
  putTag(out, field, kVarint);
  putVarint(out, v);
}

inline void putFixed64Field(Bytes& out, uint32_t field, uint64_t v) {
  putTag(out, field, kFixed64);
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));  // little-endian on the wire
}

inline void putDoubleField(Bytes& out, uint32_t field, double v) { putFixed64Field(out, field, std::bit_cast<uint64_t>(v)); }

inline void putBytesField(Bytes& out, uint32_t field, const void* data, size_t n) {
  putTag(out, field, kLengthDelimited);
  putVarint(out, n);
  const auto* p = static_cast<const uint8_t*>(data);
  out.insert(out.end(), p, p + n);
}

inline void putStringField(Bytes& out, uint32_t field, std::string_view s) {
  putBytesField(out, field, s.data(), s.size());
}

// The size a length-delimited field with an n-byte body takes.
inline size_t lengthDelimitedSize(uint32_t field, size_t n) {
  return varintSize(static_cast<uint64_t>(field) << 3) + varintSize(n) + n;
}

}  // namespace commtrace::wire
