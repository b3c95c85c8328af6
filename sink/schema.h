// The table that drives both the chunk encoder and the reader: for every record kind, which
// column of commtrace.proto holds which RecordSlot field and how it is encoded. One
// mechanism for all kinds; tests check this table against the .proto descriptors.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

#include "core/record.h"

namespace commtrace::schema {

enum class Codec : uint8_t {
  kPlain,   // uint64 varint
  kSigned,  // sint64 zigzag of the sign-extended value
  kString,  // uint32 chunk string index
  kDelta,   // sint64: the value minus a prediction, see Column
};

struct Column {
  const char* name;
  uint32_t number;   // proto field number in the kind's table message
  uint16_t offset;   // byte offset in RecordSlot
  uint8_t width;     // 1, 2, 4 or 8 bytes
  bool sign_extend;  // the field is a signed integer
  Codec codec;
  bool in_shape;
  // kDelta stores value - prediction, computed in three optional stages (mod 2^64):
  //   x = value - row[ref_column]                  (ref_column >= 0)
  //   x = x - previous row's x                     (row_delta)
  //   x = x - (last x in the same group + step)    (group != 0)
  // A group is the set of rows with equal values in the shape columns whose bits are set
  // in `group` (bit i = column i). Rows are predicted from their group's previous row.
  int8_t ref_column = -1;
  bool row_delta = false;
  uint32_t group = 0;
  uint8_t step = 0;
};

// The most columns a table has: encoder and reader keep a row's values in an array this
// long, and groups are 32-bit masks.
inline constexpr size_t kMaxColumns = 32;

struct Table {
  RecordKind kind;
  const char* name;        // also the Chunk field name: "coll", "p2p", ...
  const char* message;     // the proto message: "CollTable", ...
  uint32_t chunk_field;    // field number of this table in Chunk
  std::span<const Column> columns;
  bool live;               // the live collector reads it (ops, communicators, ops in flight, drops, clocks): sent in digests
  bool has_shape() const;
};

inline constexpr uint32_t kShapeField = 1;  // the row->shape column in tables with shapes
inline constexpr uint32_t kSparseField = 99;  // SparseColumn entries in tables with shapes
inline constexpr uint32_t kSparseColumnField = 1;
inline constexpr uint32_t kSparseRowsField = 2;
inline constexpr uint32_t kSparseValuesField = 3;
inline constexpr uint32_t kScaleField = 98;  // ColumnScale entries, in every table
inline constexpr uint32_t kScaleColumnField = 1;
inline constexpr uint32_t kScaleShiftField = 2;
inline constexpr uint32_t kFormatVersion = 2;

// Columns holding opaque 64-bit identifiers (communicator ids, CUDA stream handles): every
// reader shows them as "0x" and 16 hex digits, never as numbers (JSON would round them).
constexpr bool isIdentifier(const Column& c) {
  return std::string_view(c.name) == "comm_id" || std::string_view(c.name) == "stream";
}

// The table of a kind; nullptr for an unknown kind.
const Table* tableFor(RecordKind kind);
std::span<const Table> allTables();

inline uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  return h * 0xFF51AFD7ED558CCDull;
}

// The group context of column `column` in a row, from the row's encoded-domain values
// (strings as chunk indices). Writer and reader must agree on it; two groups whose hashes
// collide only share a prediction, which stays lossless.
inline uint64_t groupOf(size_t column, uint32_t group, const uint64_t* values) {
  uint64_t key = column + 1;
  for (uint32_t bits = group; bits != 0; bits &= bits - 1) key = mix(key, values[__builtin_ctz(bits)]);
  return key;
}

// A column's field in a slot, read and written. Inline, with a fixed-size copy per width:
// the encoder and the reader call these for every field of every record, where a call and
// a variable-length memcpy cost as much as the decoding around them.

// The field's value widened to 64 bits (sign-extended for signed fields).
inline uint64_t load(const RecordSlot& slot, const Column& column) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(&slot) + column.offset;
  switch (column.width) {
    case 1: { uint8_t v; std::memcpy(&v, bytes, 1);
      return column.sign_extend ? static_cast<uint64_t>(static_cast<int64_t>(static_cast<int8_t>(v))) : v; }
    case 2: { uint16_t v; std::memcpy(&v, bytes, 2);
      return column.sign_extend ? static_cast<uint64_t>(static_cast<int64_t>(static_cast<int16_t>(v))) : v; }
    case 4: { uint32_t v; std::memcpy(&v, bytes, 4);
      return column.sign_extend ? static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(v))) : v; }
    default: { uint64_t v; std::memcpy(&v, bytes, 8); return v; }
  }
}

// Stores the low `width` bytes of value (little-endian: the narrowed value, signed or not).
inline void store(RecordSlot& slot, const Column& column, uint64_t value) {
  auto* bytes = reinterpret_cast<unsigned char*>(&slot) + column.offset;
  switch (column.width) {
    case 1: { const auto v = static_cast<uint8_t>(value); std::memcpy(bytes, &v, 1); break; }
    case 2: { const auto v = static_cast<uint16_t>(value); std::memcpy(bytes, &v, 2); break; }
    case 4: { const auto v = static_cast<uint32_t>(value); std::memcpy(bytes, &v, 4); break; }
    default: std::memcpy(bytes, &value, 8); break;
  }
}

}  // namespace commtrace::schema
