// libFuzzer target for the trace reader: the input is a whole file. The reader must never
// crash, and what it reports must make sense: every issue names the file and an offset
// inside it, chunks come in file order from inside the file, every decoded record is of a
// known kind and its strings resolve. Mutated bytes almost never pass a frame's CRC, so
// each input is read twice: as it is, and with the CRC of every well-formed frame
// recomputed, which lets the mutations reach the protobuf parser and the chunk decoder.
//
//   clang build:  bin/reader_fuzz -max_len=65536 CORPUS_DIR
//   any build:    reader_fuzz_replay (ctest) runs this function on mutations of a valid file
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <vector>

#include "sink/crc32c.h"
#include "sink/frame.h"
#include "sink/reader.h"
#include "sink/schema.h"

namespace {

void check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "reader_fuzz: invariant broken: %s\n", what);
  std::abort();
}

// One file per process, rewritten for every input and removed at exit.
const std::string& inputPath() {
  static const std::string path = [] {
    const char* base = getenv("TMPDIR");
    std::string pattern = std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/commtrace-fuzz-XXXXXX";
    const int fd = mkstemp(pattern.data());
    check(fd >= 0, "mkstemp");
    close(fd);
    static std::string to_remove = pattern;
    std::atexit([] { unlink(to_remove.c_str()); });
    return pattern;
  }();
  return path;
}

// Rewrites the CRC of every frame whose header parses and whose payload fits in the
// file. Returns whether any byte changed.
bool repairCrcs(std::vector<uint8_t>& bytes) {
  bool changed = false;
  for (size_t p = 0; p + commtrace::frame::kHeaderBytes <= bytes.size();) {
    const auto header = commtrace::frame::parseHeader(bytes.data() + p);
    if (!header || header->length > bytes.size() - p - commtrace::frame::kHeaderBytes) {
      ++p;
      continue;
    }
    const uint8_t* payload = bytes.data() + p + commtrace::frame::kHeaderBytes;
    const uint32_t crc = commtrace::crc32c(payload, header->length, commtrace::crc32c(bytes.data() + p + 4, 8));
    for (int i = 0; i < 4; ++i) {
      const uint8_t b = static_cast<uint8_t>(crc >> (8 * i));
      changed |= bytes[p + 12 + i] != b;
      bytes[p + 12 + i] = b;
    }
    p += commtrace::frame::kHeaderBytes + header->length;
  }
  return changed;
}

void readFile(const uint8_t* data, size_t size);

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  readFile(data, size);
  std::vector<uint8_t> repaired(data, data + size);
  if (repairCrcs(repaired)) readFile(repaired.data(), repaired.size());
  return 0;
}

namespace {

void readFile(const uint8_t* data, size_t size) {
  const std::string& path = inputPath();
  const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  check(fd >= 0, "open input file");
  for (size_t done = 0; done < size;) {
    const ssize_t n = write(fd, data + done, size - done);
    check(n > 0, "write input file");
    done += static_cast<size_t>(n);
  }
  close(fd);

  commtrace::TraceReader reader;
  std::string error;
  if (!reader.open(path, error)) {
    check(error.rfind("commtrace: " + path, 0) == 0, "open() error names the file");
    commtrace::DecodedChunk chunk;
    check(!reader.next(chunk), "a refused file yields no chunk");
    return;
  }
  check(size >= 16, "an accepted file holds at least a frame header");
  commtrace::DecodedChunk chunk;
  uint64_t previous_end = 0;
  uint64_t chunks = 0;
  while (reader.next(chunk)) {
    check(chunk.offset >= previous_end, "chunks come in file order without overlap");
    check(chunk.offset + 16 <= reader.offset() && reader.offset() <= size, "a chunk lies inside the file");
    previous_end = reader.offset();
    ++chunks;
    for (const commtrace::RecordSlot& slot : chunk.records) {
      const commtrace::schema::Table* table = commtrace::schema::tableFor(slot.kind);
      check(table != nullptr, "records are of a known kind");
      for (const commtrace::schema::Column& c : table->columns) {
        const uint64_t v = commtrace::schema::load(slot, c);
        if (c.codec == commtrace::schema::Codec::kString) {
          check(v == 0 || !reader.str(static_cast<commtrace::StringId>(v)).empty(), "string ids resolve");
        }
      }
    }
  }
  check(chunks < size, "no more chunks than bytes");
  const std::string prefix = "commtrace: " + path + ": offset ";
  for (const commtrace::ReadIssue& issue : reader.issues()) {
    check(issue.offset < size, "issues lie inside the file");
    check(issue.message.rfind(prefix + std::to_string(issue.offset) + ": ", 0) == 0, "issues name file and offset");
  }
  // A torn tail is reported, but for an open file's last frame cut short: the chunk being written.
  check(!reader.tornTail() || !reader.issues().empty() || reader.state() == commtrace::TraceReader::State::kOpen,
        "a torn tail is reported or the file is open");
}

}  // namespace
