// Turns drained records into one Chunk message (commtrace.proto): per kind a table of
// packed columns, shapes interned, strings interned into the chunk's own table, times
// delta-encoded, all as the schema table says. Runs on the flusher thread only.
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
  void finish(uint64_t chunk_index, wire::Bytes& out);

 private:
  struct KindState;

  uint64_t localString(uint64_t global_id);
  void reset();

  const StringTable& strings_;
  std::array<std::unique_ptr<KindState>, kRecordKindCount> kinds_;
  std::vector<uint32_t> local_of_global_;  // global StringId -> local index + 1 (0 = unset)
  std::vector<uint32_t> globals_in_chunk_;  // local index -> global StringId
  uint32_t rows_ = 0;
};

}  // namespace commtrace
