// Reads a trace file back, chunk by chunk, without loading it whole. Every frame's CRC is
// checked; a damaged or truncated frame is reported with the file and offset and skipped,
// and reading resumes at the next intact frame. Parses with libprotobuf (tools only: the
// capture library never links this): the header as a message, chunks with its wire-format
// reader (chunk_wire.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/record.h"
#include "sink/byte_source.h"
#include "sink/chunk_wire.h"
#include "sink/commtrace.pb.h"

namespace commtrace {

struct ReadIssue {
  uint64_t offset;
  std::string message;  // "commtrace: FILE: offset N: what happened"
};

struct DecodedChunk {
  uint64_t offset = 0;  // of its frame in the file
  uint64_t index = 0;   // Chunk.index as written
  std::vector<RecordSlot> records;  // string fields hold TraceReader string ids

  // next()'s scratch, kept with the decoded records so that one reader thread's chunks
  // reuse one frame buffer and one set of column buffers (they keep their capacity): fresh
  // ones per chunk were a few dozen allocations, per 200 ms chunk of every process.
  std::vector<uint8_t> frame_bytes;
  WireChunk wire;
};

class TraceReader {
 public:
  TraceReader();
  ~TraceReader();
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;

  // false with a complete message if the file cannot be read or is not a commtrace trace
  // (no valid FileHeader frame at offset 0, or a newer format version). With `descriptors`,
  // the file's descriptor is that pool's (byte_source.h).
  bool open(const std::string& path, std::string& error, DescriptorPool* descriptors = nullptr);
  // The same for a stream held elsewhere (a live digest stream), `name` standing for its path.
  bool open(const std::string& name, std::shared_ptr<ByteSource> source, std::string& error);

  const trace::v1::FileHeader& header() const { return header_; }
  const std::string& path() const { return path_; }

  // The next intact chunk; false at the end of the file.
  bool next(DecodedChunk& chunk);
  // For a file still being written (`commtrace watch`): looks again at how far it reaches,
  // so that next() goes on with what was appended since; a frame the old end cut short is
  // read again from its start. false if the file can no longer be looked at.
  bool refresh();

  // Text of a string id found in a decoded record (ids are per reader, stable per file).
  std::string_view str(StringId id) const;

  // The file as its writer has left it so far: closed (its last chunk marked closing), open
  // (a writer that marks its last chunk has not: still being written, or its process died
  // without the chance), or unknown (a writer that does not mark it, before 0.1).
  enum class State { kClosed, kOpen, kUnknown };
  State state() const;

  // Damage, and a torn tail of a closed or unknown file. An open file's last frame cut short
  // by the end of the file is the chunk being written: tornTail() says so, without an issue.
  const std::vector<ReadIssue>& issues() const { return issues_; }
  bool tornTail() const { return torn_tail_; }
  uint64_t tornTailOffset() const { return torn_tail_offset_; }  // where the torn tail begins
  uint64_t size() const { return size_; }
  uint64_t offset() const { return offset_; }

 private:
  struct Frame;
  // With a budget (resynchronising), each payload checked is charged to it; one past it
  // gives resynchronising up (resync_gave_up_).
  bool readFrameAt(uint64_t offset, Frame& frame, std::string& why, uint64_t* budget = nullptr);
  uint64_t findNextFrame(uint64_t from);
  bool decodeChunk(WireChunk& chunk, DecodedChunk& out, std::string& why);
  bool decodeTables(WireChunk& chunk, DecodedChunk& out, std::string& why);
  StringId fileString(std::string_view s);
  void report(uint64_t offset, const std::string& what);

  std::shared_ptr<ByteSource> source_;
  std::string path_;
  uint64_t size_ = 0;
  uint64_t offset_ = 0;
  bool torn_tail_ = false;
  uint64_t torn_tail_offset_ = 0;
  // What resynchronising may still check (bytes of candidate frames): a multiple of the file's size.
  static constexpr uint64_t kResyncBytesPerByte = 8;
  static constexpr uint64_t kResyncSlack = 64u << 20;
  uint64_t resync_budget_ = kResyncSlack;
  bool resync_gave_up_ = false;
  bool last_chunk_closing_ = false;
  // The last frame's payload: the next is read with its header in one call when no longer
  // (a file's chunks are alike in size; two reads a chunk were 320,000 syscalls for 61 MB).
  uint32_t last_payload_ = 0;
  static constexpr uint64_t kPayloadReadAhead = 2048;  // at least, past the header
  trace::v1::FileHeader header_;
  std::vector<std::string> strings_;
  std::vector<StringId> string_table_;  // the chunks' string table: index -> file string id
  std::vector<StringId> previous_string_table_;  // decodeChunk's scratch: the table a fresh one replaces
  bool have_table_ = false;
  uint64_t table_since_ = 0;  // Chunk.index of the chunk that started string_table_
  struct StringIndex;
  std::unique_ptr<StringIndex> string_index_;
  std::vector<ReadIssue> issues_;
};

}  // namespace commtrace
