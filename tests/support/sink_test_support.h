// Helpers shared by the sink tests: records that fill every schema
// column with values chosen to stress its codec, writing trace files through the real
// ChunkEncoder and frame code, reading them back, and comparing records column by column
// (strings resolved on both sides, so global StringTable ids and reader ids compare alike).
#pragma once

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/record.h"
#include "core/string_table.h"
#include "ringbuffer/ringbuffer.h"
#include "sink/chunk_encoder.h"
#include "sink/commtrace.pb.h"
#include "sink/frame.h"
#include "sink/reader.h"
#include "sink/schema.h"
#include "sink/trace_file.h"
#include "tests/support/temp_dir.h"

namespace commtrace::testing {

using testutil::TempDir;

// A path inside a temporary directory.
inline std::string pathIn(const TempDir& dir, const std::string& name) { return dir.path() + "/" + name; }

inline void writeFile(const std::string& path, const void* data, size_t n) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
}
inline void writeFile(const std::string& path, const std::vector<uint8_t>& bytes) {
  writeFile(path, bytes.data(), bytes.size());
}
inline std::vector<uint8_t> readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The .ctrace files in a directory.
inline std::vector<std::string> traceFilesIn(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".ctrace") out.push_back(entry.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Pushes a slot's record into the calling thread's ring, as the face of that kind would.
inline PushResult recordSlot(const RecordSlot& s) {
  PushResult result = PushResult::kDropped;
  visitRecord(s, [&](const auto& r) { result = record(r); });
  return result;
}

// The values that stress a column of the given width: zero, one, the unsigned and signed
// extremes of the width, and the neighbours of the signed boundary.
inline std::vector<uint64_t> extremeValues(uint8_t width) {
  const uint64_t umax = width == 8 ? std::numeric_limits<uint64_t>::max() : (uint64_t{1} << (8 * width)) - 1;
  const uint64_t smax = umax >> 1;  // INTn_MAX
  const uint64_t smin = smax + 1;   // INTn_MIN as the unsigned bit pattern of the width
  return {0, 1, 2, umax, umax - 1, smax, smin, smin + 1, 0x7F, 0x80};
}

// The canonical (load()-domain) value of v stored into column c: narrowed to the width,
// sign-extended for signed fields.
inline uint64_t canonical(const schema::Column& c, uint64_t v) {
  RecordSlot s{};
  schema::store(s, c, v);
  return schema::load(s, c);
}

// Strings interned into the global table that exercise the string column: empty, the
// 255-byte maximum, quotes and escapes, UTF-8, and realistic NCCL names.
inline std::vector<StringId> stressStrings() {
  StringTable& table = StringTable::global();
  std::vector<StringId> ids;
  ids.push_back(table.intern(""));
  for (const char* s : {"AllReduce", "AllGather", "ReduceScatter", "Send", "Recv", "ncclFloat32", "ncclBfloat16",
                        "RING", "TREE", "LL", "LL128", "SIMPLE", "with \"quotes\", \\backslash\\ and\ttab\nnewline",
                        "utf-8: \xC3\xB1\xE2\x82\xAC\xF0\x9F\x9A\x80", "x"}) {
    ids.push_back(table.intern(s));
  }
  ids.push_back(table.intern(std::string(StringTable::kMaxLength, 'L')));
  std::string printable;
  for (uint32_t i = 0; i < StringTable::kMaxLength; ++i) printable.push_back(static_cast<char>(' ' + i % 95));
  ids.push_back(table.intern(printable));
  return ids;
}

// Random records of any kind with every column set, from pools small enough that shapes
// and delta keys repeat and large enough that many distinct shapes appear.
class SlotGenerator {
 public:
  explicit SlotGenerator(uint64_t seed) : rng_(seed), strings_(stressStrings()) {}

  // Adds n distinct interned strings "<prefix>-<i>" to the string pool.
  void addDistinctStrings(const std::string& prefix, int n) {
    for (int i = 0; i < n; ++i) strings_.push_back(StringTable::global().intern(prefix + "-" + std::to_string(i)));
  }

  uint64_t value(const schema::Column& c) {
    if (c.codec == schema::Codec::kString) return strings_[rng_() % strings_.size()];
    const auto extremes = extremeValues(c.width);
    switch (rng_() % 4) {
      case 0: return extremes[rng_() % extremes.size()];
      case 1: return rng_() % 4;               // small values: shapes and keys repeat
      case 2: return 1'000'000'000 + rng_() % 100'000;  // times that go forwards and backwards
      default: return rng_();                  // any bit pattern
    }
  }

  RecordSlot make(RecordKind kind, uint32_t thread) {
    RecordSlot slot{};
    slot.kind = kind;
    slot.thread = thread;
    for (const schema::Column& c : schema::tableFor(kind)->columns) schema::store(slot, c, value(c));
    slot.thread = thread;  // the thread column, where the kind has one, is the slot's header
    return slot;
  }

  RecordKind anyKind() { return static_cast<RecordKind>(1 + rng_() % (kRecordKindCount - 1)); }
  std::mt19937_64& rng() { return rng_; }

 private:
  std::mt19937_64 rng_;
  std::vector<StringId> strings_;
};

// Column by column comparison of a record as written (string fields hold global
// StringTable ids) with one read back (string fields hold reader ids). Empty if equal,
// else what differs.
inline std::string diffRecord(const RecordSlot& want, const RecordSlot& got, const TraceReader& reader) {
  if (want.kind != got.kind) {
    return "kind " + std::to_string(static_cast<int>(want.kind)) + " read back as " +
           std::to_string(static_cast<int>(got.kind));
  }
  const schema::Table* table = schema::tableFor(want.kind);
  if (table == nullptr) return "unknown kind";
  std::ostringstream out;
  for (const schema::Column& c : table->columns) {
    const uint64_t w = schema::load(want, c);
    const uint64_t g = schema::load(got, c);
    if (c.codec == schema::Codec::kString) {
      const std::string_view ws = StringTable::global().lookup(static_cast<StringId>(w));
      const std::string_view gs = reader.str(static_cast<StringId>(g));
      if (ws != gs) out << table->name << '.' << c.name << ": wrote \"" << ws << "\" read \"" << gs << "\"; ";
    } else if (w != g) {
      out << table->name << '.' << c.name << ": wrote " << w << " read " << g << "; ";
    }
  }
  return out.str();
}

// Records in the order the reader returns them: per chunk, kind by kind in table order,
// each kind in the order it was added.
inline std::vector<RecordSlot> readerOrder(std::vector<RecordSlot> records) {
  std::stable_sort(records.begin(), records.end(),
                   [](const RecordSlot& a, const RecordSlot& b) { return a.kind < b.kind; });
  return records;
}

inline FileHeaderFields testHeader() {
  FileHeaderFields h;
  h.identity.rank = 5;
  h.identity.local_rank = 1;
  h.identity.world_size = 16;
  h.identity.job_id = "job-42";
  h.host = "testhost";
  h.pid = 4242;
  h.start_realtime_ns = 1'700'000'000'000'000'000ull;
  h.start_monotonic_ns = 123'456'789;
  h.program = "/usr/bin/python3";
  h.ring_records = 16384;
  h.flush_period_ms = 100;
  return h;
}

// A trace file as the flusher would write it, built in memory: the FileHeader frame, then
// one Chunk frame per element of chunks (indices 0, 1, ...). Remembers where each frame is.
struct BuiltTrace {
  std::vector<uint8_t> bytes;
  uint64_t header_end = 0;                      // end of the FileHeader frame
  std::vector<uint64_t> chunk_begin, chunk_end;  // per chunk frame
  std::vector<std::vector<RecordSlot>> expected;  // per chunk, in reader order
  std::vector<bool> fresh_strings;  // per chunk: its string table starts afresh (needs no earlier chunk)
  std::vector<bool> adds_strings;   // per chunk: it carries strings (later chunks may need them)
};

// closed: the last chunk is marked closing, as the flusher's stop() writes it.
inline BuiltTrace buildTrace(const std::vector<std::vector<RecordSlot>>& chunks,
                             const FileHeaderFields& header = testHeader(), bool closed = true) {
  BuiltTrace t;
  frame::append(t.bytes, frame::Type::kFileHeader, 0, encodeFileHeader(header));
  t.header_end = t.bytes.size();
  ChunkEncoder encoder(StringTable::global());
  wire::Bytes payload;
  for (size_t i = 0; i < chunks.size(); ++i) {
    for (const RecordSlot& s : chunks[i]) encoder.add(s);
    encoder.finish(i, closed && i + 1 == chunks.size(), payload);
    t.chunk_begin.push_back(t.bytes.size());
    frame::append(t.bytes, frame::Type::kChunk, 0, payload);
    t.chunk_end.push_back(t.bytes.size());
    t.expected.push_back(readerOrder(chunks[i]));
    trace::v1::Chunk message;
    message.ParseFromArray(payload.data(), static_cast<int>(payload.size()));
    t.fresh_strings.push_back(message.strings_before() == 0);
    t.adds_strings.push_back(message.strings_size() > 0);
  }
  return t;
}

// Everything a reader returns for one file.
struct ReadBack {
  std::unique_ptr<TraceReader> reader = std::make_unique<TraceReader>();
  bool opened = false;
  std::string error;
  std::vector<DecodedChunk> chunks;
};

inline ReadBack readTrace(const std::string& path) {
  ReadBack r;
  r.opened = r.reader->open(path, r.error);
  if (!r.opened) return r;
  DecodedChunk chunk;
  while (r.reader->next(chunk)) r.chunks.push_back(chunk);
  return r;
}

// Empty if the chunk read back holds exactly the expected records, else the first
// differences.
inline std::string diffChunk(const std::vector<RecordSlot>& want, const DecodedChunk& got, const TraceReader& reader) {
  std::ostringstream out;
  if (want.size() != got.records.size()) {
    out << "chunk " << got.index << ": wrote " << want.size() << " records, read " << got.records.size() << "; ";
  }
  int shown = 0;
  for (size_t i = 0; i < std::min(want.size(), got.records.size()) && shown < 5; ++i) {
    const std::string d = diffRecord(want[i], got.records[i], reader);
    if (!d.empty()) {
      out << "chunk " << got.index << " record " << i << ": " << d << '\n';
      ++shown;
    }
  }
  return out.str();
}

}  // namespace commtrace::testing
