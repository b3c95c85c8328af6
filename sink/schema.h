// The table that drives both the chunk encoder and the reader: for every record kind, which
// column of commtrace.proto holds which RecordSlot field and how it is encoded. One
// mechanism for all kinds; tests check this table against the .proto descriptors.
#pragma once

#include <cstdint>
#include <span>

#include "ringbuffer/record.h"

namespace commtrace::schema {

enum class Codec : uint8_t {
  kPlain,   // uint64 varint
  kSigned,  // sint64 zigzag of the sign-extended value
  kString,  // uint32 chunk string index
  kDelta,   // sint64 as described by ref_column/prev
};

enum class Prev : uint8_t { kNone, kRow, kKey };

struct Column {
  const char* name;
  uint32_t number;   // proto field number in the kind's table message
  uint16_t offset;   // byte offset in RecordSlot
  uint8_t width;     // 1, 2, 4 or 8 bytes
  bool sign_extend;  // the field is a signed integer
  Codec codec;
  bool in_shape;
  int8_t ref_column = -1;  // kDelta: index of the same-row column subtracted first
  Prev prev = Prev::kNone;  // kDelta: subtract the previous row's (value - ref)
};

struct Table {
  RecordKind kind;
  const char* name;        // also the Chunk field name: "coll", "p2p", ...
  const char* message;     // the proto message: "CollTable", ...
  uint32_t chunk_field;    // field number of this table in Chunk
  std::span<const Column> columns;
  std::span<const uint8_t> key_columns;  // columns that form the key for Prev::kKey
  bool has_shape() const;
};

inline constexpr uint32_t kShapeField = 1;  // the row->shape column in tables with shapes
inline constexpr uint32_t kFormatVersion = 1;

// The table of a kind; nullptr for an unknown kind.
const Table* tableFor(RecordKind kind);
std::span<const Table> allTables();

inline uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  return h * 0xFF51AFD7ED558CCDull;
}

// The Prev::kKey context of a row, from its encoded-domain values (strings as chunk
// indices). Writer and reader must agree on it; equal hashes of different keys only share
// a delta context, which stays lossless.
inline uint64_t keyOf(const Table& table, const uint64_t* values) {
  uint64_t key = 0;
  for (uint8_t c : table.key_columns) key = mix(key, values[c]);
  return key;
}

// A column's value in a slot, widened to 64 bits (sign-extended for signed fields).
uint64_t load(const RecordSlot& slot, const Column& column);
void store(RecordSlot& slot, const Column& column, uint64_t value);

}  // namespace commtrace::schema
