// The frame that wraps every message in a trace file (layout documented in
// commtrace.proto): 16-byte header with magic, type, flags, length and CRC-32C.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "sink/wire.h"

namespace commtrace::frame {

inline constexpr uint8_t kMagic[4] = {'C', 'T', 'F', 'R'};
inline constexpr size_t kHeaderBytes = 16;
inline constexpr uint32_t kMaxPayload = 256u << 20;  // larger lengths are damage

enum class Type : uint8_t { kFileHeader = 1, kChunk = 2 };
inline constexpr uint8_t kFlagZstd = 1;

struct Header {
  Type type;
  uint8_t flags;
  uint32_t length;
  uint32_t crc;
};

// Appends a complete frame (header + payload) to out.
void append(wire::Bytes& out, Type type, uint8_t flags, std::span<const uint8_t> payload);

// Parses the 16 bytes at p; nullopt if the magic or the fixed fields are wrong.
std::optional<Header> parseHeader(const uint8_t* p);

// True if the CRC in h matches the payload.
bool crcMatches(const uint8_t* header_bytes, const Header& h, std::span<const uint8_t> payload);

}  // namespace commtrace::frame
