// A chunk's wire form read into its tables' columns, as libprotobuf hands repeated integer
// fields over (uint32 truncated, sint zigzag-decoded, each widened to uint64), with
// libprotobuf's wire-format reader (CodedInputStream) and the field types of the .proto's
// descriptors. Parsing the Chunk message and reading its columns through reflection cost
// ~100 ns per record (a virtual call per value, a descriptor lookup per column per chunk,
// vectors allocated per column per chunk); this reads each value once into buffers that
// keep their capacity from chunk to chunk. proto_conformance_test holds it to the parsed
// message on every table.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

namespace commtrace {

// The most values a column, and records a chunk, may have: 64 times what the writer puts in
// one chunk (16,384 records). A chunk claiming more is damage, refused before it costs memory
// (8 MB of packed zeros read as 8M rows held 1.5 GB).
inline constexpr size_t kMaxChunkRows = size_t{1} << 20;

// One table of a chunk as written: its columns indexed like its schema::Table's columns.
struct WireTable {
  struct Sparse {  // a SparseColumn entry
    uint32_t field = 0;
    std::vector<uint64_t> rows, values;
  };
  bool present = false;
  std::vector<std::vector<uint64_t>> columns;
  std::vector<uint64_t> row_shape;
  std::vector<Sparse> sparse;  // the first sparse_count are this chunk's (the rest keep capacity)
  size_t sparse_count = 0;
  std::vector<std::pair<uint32_t, uint32_t>> scales;  // ColumnScale entries: (field, shift)
};

struct WireChunk {
  uint64_t index = 0;
  uint64_t strings_before = 0;
  uint64_t strings_since = 0;
  bool closing = false;
  std::vector<std::string_view> strings;  // into the bytes parsed
  std::vector<WireTable> tables;          // indexed like schema::allTables()
};

// false if the bytes are not a well-formed Chunk message (what libprotobuf would refuse).
// Fields not in the schema are skipped, as libprotobuf keeps them aside.
bool parseChunk(std::span<const uint8_t> bytes, WireChunk& out);

}  // namespace commtrace
