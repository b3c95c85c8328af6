// Turns drained records into one Chunk message (commtrace.proto): per kind a table of
// packed columns, shapes interned, strings interned into a table that continues from chunk
// to chunk (each chunk carries only the strings new to it) and starts afresh every
// kChunksPerStringTable chunks, times delta-encoded, all as the schema table says. Runs on
// the flusher thread only.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/record.h"
#include "sink/schema.h"
#include "sink/wire.h"

namespace commtrace {

class StringTable;

class ChunkEncoder {
 public:
  explicit ChunkEncoder(const StringTable& strings);
  ~ChunkEncoder();

  void add(const RecordSlot& slot);
  uint32_t rows() const { return rows_; }
  uint32_t rows(RecordKind kind) const;

  // Serializes the chunk into out (replacing its contents) and starts a new chunk.
  // closing: the process is stopping to record (Chunk.closing).
  void finish(uint64_t chunk_index, bool closing, wire::Bytes& out);

  // The chunk just finished did not reach the file: the next one must not refer to the
  // strings it carried, so it starts a fresh table.
  void restartStringTable();

  // A chunk lost mid-file costs the names of the chunks after it until the next fresh
  // table: at the default 200 ms period, 10 s of them at most.
  static constexpr uint32_t kChunksPerStringTable = 50;

 private:
  struct KindState;

  uint64_t localString(uint64_t global_id);
  void reset();

  const StringTable& strings_;
  std::array<std::unique_ptr<KindState>, kRecordKindCount> kinds_;
  std::vector<uint32_t> local_of_global_;  // global StringId -> table index + 1 (0 = unset)
  std::vector<uint32_t> globals_in_table_;  // table index -> global StringId
  size_t strings_before_chunk_ = 0;         // the table's size when this chunk began
  uint64_t table_since_ = 0;                // the index of the chunk that started the table
  uint32_t chunks_in_table_ = 0;
  uint32_t rows_ = 0;
};

}  // namespace commtrace
