#include "sink/frame.h"

#include <cstring>

#include "sink/crc32c.h"

namespace commtrace::frame {
namespace {

void putLe32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t getLe32(const uint8_t* p) {
  return p[0] | (p[1] << 8) | (p[2] << 16) | (static_cast<uint32_t>(p[3]) << 24);
}
// The CRC covers type, flags, reserved, length (bytes 4..11) and the payload.
uint32_t frameCrc(const uint8_t* header_bytes, std::span<const uint8_t> payload) {
  return crc32c(payload.data(), payload.size(), crc32c(header_bytes + 4, 8));
}

}  // namespace

void append(wire::Bytes& out, Type type, uint8_t flags, std::span<const uint8_t> payload) {
  uint8_t header[kHeaderBytes] = {};
  std::memcpy(header, kMagic, 4);
  header[4] = static_cast<uint8_t>(type);
  header[5] = flags;
  putLe32(header + 8, static_cast<uint32_t>(payload.size()));
  putLe32(header + 12, frameCrc(header, payload));
  out.insert(out.end(), header, header + kHeaderBytes);
  out.insert(out.end(), payload.begin(), payload.end());
}

std::optional<Header> parseHeader(const uint8_t* p) {
  if (std::memcmp(p, kMagic, 4) != 0) return std::nullopt;
  const uint8_t type = p[4];
  if (type != static_cast<uint8_t>(Type::kFileHeader) && type != static_cast<uint8_t>(Type::kChunk)) {
    return std::nullopt;
  }
  if ((p[5] & ~kFlagZstd) != 0 || p[6] != 0 || p[7] != 0) return std::nullopt;
  const uint32_t length = getLe32(p + 8);
  if (length > kMaxPayload) return std::nullopt;
  return Header{static_cast<Type>(type), p[5], length, getLe32(p + 12)};
}

bool crcMatches(const uint8_t* header_bytes, const Header& h, std::span<const uint8_t> payload) {
  return frameCrc(header_bytes, payload) == h.crc;
}

}  // namespace commtrace::frame
