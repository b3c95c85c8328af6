// Following a trace file while it is written (`commtrace watch`): after the reader reaches
// the end, refresh() lets it go on with what was appended, a frame cut short by the old end
// is read whole once the rest arrives, and a file still being written reports no damage. The
// same for a stream in memory (the live collector's), which frees what has been read.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdio>
#include <fstream>

#include "sink/byte_source.h"
#include "tests/support/sink_test_support.h"

namespace commtrace {
namespace {

using testing::BuiltTrace;
using testing::TempDir;

BuiltTrace openTrace(size_t chunks) {
  testing::SlotGenerator gen(9);
  std::vector<std::vector<RecordSlot>> slots(chunks);
  for (size_t c = 0; c < chunks; ++c)
    for (int i = 0; i < 5; ++i) slots[c].push_back(gen.make(RecordKind::kColl, 20 + static_cast<uint32_t>(c)));
  return testing::buildTrace(slots, testing::testHeader(), false);
}

void writeBytes(const std::string& path, const std::vector<uint8_t>& bytes, size_t from, size_t to, bool append) {
  std::ofstream out(path, std::ios::binary | (append ? std::ios::app : std::ios::trunc));
  out.write(reinterpret_cast<const char*>(bytes.data() + from), static_cast<std::streamsize>(to - from));
}

TEST(ReaderFollow, RefreshGoesOnWithWhatWasAppendedAndReadsACutFrameWhole) {
  TempDir dir;
  const std::string path = dir.path() + "/growing.ctrace";
  const BuiltTrace built = openTrace(4);
  // The header and chunk 0, then half of chunk 1.
  const size_t half = (built.chunk_begin[1] + built.chunk_end[1]) / 2;
  writeBytes(path, built.bytes, 0, half, false);
  TraceReader reader;
  std::string error;
  ASSERT_TRUE(reader.open(path, error)) << error;
  DecodedChunk chunk;
  ASSERT_TRUE(reader.next(chunk));
  EXPECT_EQ(chunk.index, 0u);
  EXPECT_FALSE(reader.next(chunk)) << "chunk 1 is not whole yet";
  EXPECT_TRUE(reader.issues().empty()) << "an open file's last frame cut short is the chunk being written";

  ASSERT_TRUE(reader.refresh());
  EXPECT_FALSE(reader.next(chunk)) << "nothing appended: still cut short";
  writeBytes(path, built.bytes, half, built.chunk_end[2], true);
  ASSERT_TRUE(reader.refresh());
  for (uint64_t want : {1u, 2u}) {
    ASSERT_TRUE(reader.next(chunk)) << want;
    EXPECT_EQ(chunk.index, want);
    EXPECT_EQ(testing::diffChunk(built.expected[want], chunk, reader), "");
  }
  EXPECT_FALSE(reader.next(chunk));
  writeBytes(path, built.bytes, built.chunk_end[2], built.bytes.size(), true);
  ASSERT_TRUE(reader.refresh());
  ASSERT_TRUE(reader.next(chunk));
  EXPECT_EQ(chunk.index, 3u);
  EXPECT_FALSE(reader.next(chunk));
  EXPECT_TRUE(reader.issues().empty());
  EXPECT_FALSE(reader.tornTail());
  EXPECT_EQ(reader.state(), TraceReader::State::kOpen);
}

// The stream arrives in pieces of 37 bytes, as TCP may cut it: every chunk comes out whole
// and in order, and the stream holds no more than the frame still being received.
TEST(ReaderFollow, AStreamInMemoryReadsAsTheFileWouldAndFreesWhatWasRead) {
  const BuiltTrace built = openTrace(6);
  auto stream = std::make_shared<StreamBytes>();
  stream->append({built.bytes.data(), built.header_end});
  TraceReader reader;
  std::string error;
  ASSERT_TRUE(reader.open("live.ctrace", stream, error)) << error;
  DecodedChunk chunk;
  uint64_t next_index = 0;
  size_t most_held = 0;
  for (size_t at = built.header_end; at < built.bytes.size(); at += 37) {
    stream->append({built.bytes.data() + at, std::min<size_t>(37, built.bytes.size() - at)});
    most_held = std::max(most_held, stream->held());
    ASSERT_TRUE(reader.refresh());
    while (reader.next(chunk)) {
      ASSERT_EQ(chunk.index, next_index);
      EXPECT_EQ(testing::diffChunk(built.expected[next_index], chunk, reader), "");
      ++next_index;
    }
  }
  EXPECT_EQ(next_index, 6u);
  EXPECT_TRUE(reader.issues().empty());
  EXPECT_EQ(stream->held(), 0u) << "everything read was released";
  uint64_t longest_frame = 0;
  for (size_t c = 0; c < 6; ++c) longest_frame = std::max(longest_frame, built.chunk_end[c] - built.chunk_begin[c]);
  EXPECT_LE(most_held, built.header_end + longest_frame + 37) << "what was read was freed as it was read";
  uint8_t byte = 0;
  EXPECT_FALSE(stream->readAt(0, &byte, 1)) << "released bytes cannot be read again";
}

// Two files through a pool of one descriptor: each read takes it from the other, and a file
// reopened reads what it did; one replaced while its descriptor was closed is not read as the
// same file (its device and inode changed), the other still is.
TEST(DescriptorPool, FilesShareItsDescriptorsAndAReplacedFileIsNotReadAsTheSame) {
  TempDir dir;
  const std::string a_path = dir.path() + "/a", b_path = dir.path() + "/b";
  writeBytes(a_path, {'a', 'a', 'a', 'a'}, 0, 4, false);
  writeBytes(b_path, {'b', 'b', 'b', 'b'}, 0, 4, false);
  DescriptorPool pool(1);
  FileBytes a, b;
  ASSERT_TRUE(a.open(a_path, &pool));
  ASSERT_TRUE(b.open(b_path, &pool));  // a's descriptor closed for it
  char got[4] = {};
  for (int round = 0; round < 3; ++round) {
    ASSERT_TRUE(a.readAt(0, got, 4));
    EXPECT_EQ(std::string(got, 4), "aaaa");
    ASSERT_TRUE(b.readAt(0, got, 4));
    EXPECT_EQ(std::string(got, 4), "bbbb");
  }
  writeBytes(dir.path() + "/a.new", {'x', 'x', 'x', 'x'}, 0, 4, false);
  ASSERT_EQ(std::rename((dir.path() + "/a.new").c_str(), a_path.c_str()), 0);
  errno = 0;
  EXPECT_FALSE(a.readAt(0, got, 4)) << "another file by the same name";
  EXPECT_EQ(errno, ESTALE);
  ASSERT_TRUE(b.readAt(0, got, 4));
  EXPECT_EQ(std::string(got, 4), "bbbb");
}

}  // namespace
}  // namespace commtrace
