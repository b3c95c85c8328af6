// The reader on damaged, truncated and foreign files: it never crashes, names the file and
// the offset of every damaged region, and returns every chunk whose frame the damage did
// not touch, with the right records.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <random>

#include "sink/commtrace.pb.h"
#include "tests/support/sink_test_support.h"

namespace commtrace {
namespace {

using testing::BuiltTrace;
using testing::ReadBack;
using testing::TempDir;

// A small file: 4 chunks of a few records of several kinds.
BuiltTrace smallTrace(const FileHeaderFields& header = testing::testHeader()) {
  testing::SlotGenerator gen(5);
  std::vector<std::vector<RecordSlot>> chunks(4);
  const RecordKind kinds[] = {RecordKind::kColl, RecordKind::kP2p, RecordKind::kKernelCh, RecordKind::kClockSample,
                              RecordKind::kDropSummary};
  for (size_t c = 0; c < chunks.size(); ++c) {
    for (int i = 0; i < 3 + static_cast<int>(c); ++i) chunks[c].push_back(gen.make(kinds[(c + i) % 5], 10 + static_cast<uint32_t>(c)));
  }
  return testing::buildTrace(chunks, header);
}

std::string offsetMessagePrefix(const std::string& path, uint64_t offset) {
  return "commtrace: " + path + ": offset " + std::to_string(offset) + ": ";
}

// Checks that exactly the chunks in `want` were returned, whole and unchanged.
void expectChunks(const BuiltTrace& built, const ReadBack& back, const std::vector<size_t>& want) {
  ASSERT_EQ(back.chunks.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const DecodedChunk& got = back.chunks[i];
    EXPECT_EQ(got.index, want[i]);
    EXPECT_EQ(got.offset, built.chunk_begin[want[i]]);
    const std::string d = testing::diffChunk(built.expected[want[i]], got, *back.reader);
    ASSERT_TRUE(d.empty()) << d;
  }
}

// What damage to chunk k costs: k, and when k carried strings, the chunks after it that
// continue its string table (up to the next that starts it afresh).
std::vector<size_t> lostWith(const BuiltTrace& built, size_t k) {
  std::vector<size_t> lost{k};
  if (!built.adds_strings[k]) return lost;
  while (lost.back() + 1 < built.chunk_begin.size() && !built.fresh_strings[lost.back() + 1]) lost.push_back(lost.back() + 1);
  return lost;
}

// The chunk whose frame holds offset o, or -1 for the file header.
int chunkAt(const BuiltTrace& built, uint64_t o) {
  for (size_t k = 0; k < built.chunk_begin.size(); ++k) {
    if (o >= built.chunk_begin[k] && o < built.chunk_end[k]) return static_cast<int>(k);
  }
  return -1;
}

// Damage inside the file header frame costs the header, not the chunks behind it: the
// reader reports it at offset 0 and returns every chunk.
void expectHeaderDamageHandled(const BuiltTrace& built, const std::string& path, ReadBack& back) {
  ASSERT_TRUE(back.opened) << back.error;
  ASSERT_FALSE(back.reader->issues().empty());
  EXPECT_EQ(back.reader->issues().front().offset, 0u);
  EXPECT_EQ(back.reader->issues().front().message.rfind("commtrace: " + path, 0), 0u);
  std::vector<size_t> all(built.chunk_begin.size());
  for (size_t k = 0; k < all.size(); ++k) all[k] = k;
  expectChunks(built, back, all);
}

TEST(ReaderCorruption, IntactFileReadsCleanly) {
  TempDir dir;
  const BuiltTrace built = smallTrace();
  const std::string path = testing::pathIn(dir, "intact.ctrace");
  testing::writeFile(path, built.bytes);
  ReadBack back = testing::readTrace(path);
  ASSERT_TRUE(back.opened) << back.error;
  EXPECT_TRUE(back.reader->issues().empty());
  EXPECT_FALSE(back.reader->tornTail());
  expectChunks(built, back, {0, 1, 2, 3});
  EXPECT_EQ(back.reader->header().host(), "testhost");
  EXPECT_EQ(back.reader->header().rank(), 5);
}

// Two processes' files joined with `cat`: the second file's header is another process, not
// more of this one (read as this one's, its ops changed the findings: the slow link named
// moved). What follows it is not read, and the issue says where to cut the file.
TEST(ReaderCorruption, ASecondFileHeaderEndsTheFile) {
  TempDir dir;
  const BuiltTrace first = smallTrace();
  FileHeaderFields other = testing::testHeader();
  other.host = "otherhost";
  const BuiltTrace second = smallTrace(other);
  std::vector<uint8_t> bytes = first.bytes;
  bytes.insert(bytes.end(), second.bytes.begin(), second.bytes.end());
  const std::string path = testing::pathIn(dir, "cat.ctrace");
  testing::writeFile(path, bytes);
  ReadBack back = testing::readTrace(path);
  ASSERT_TRUE(back.opened) << back.error;
  expectChunks(first, back, {0, 1, 2, 3});
  EXPECT_EQ(back.reader->header().host(), "testhost");
  ASSERT_EQ(back.reader->issues().size(), 1u);
  EXPECT_EQ(back.reader->issues()[0].offset, first.bytes.size());
  EXPECT_NE(back.reader->issues()[0].message.find("another file's header"), std::string::npos) << back.reader->issues()[0].message;
  EXPECT_FALSE(back.reader->tornTail());
}

// 4 MiB of planted frame headers, each claiming the rest of the file with a wrong CRC: each
// candidate cost a read and a CRC of the rest, past 120 s in all. Resynchronising is bounded
// by a multiple of the file's size: the chunks before are read, the rest is given up and said so.
TEST(ReaderCorruption, DensePlantedFrameHeadersAreGivenUpInBoundedTime) {
  TempDir dir;
  const BuiltTrace built = smallTrace();
  const uint64_t at = built.chunk_begin[2];
  constexpr size_t kPlanted = (4u << 20) / frame::kHeaderBytes;
  std::vector<uint8_t> bytes(built.bytes.begin(), built.bytes.begin() + static_cast<ptrdiff_t>(at));
  const size_t tail = built.bytes.size() - at;
  for (size_t k = 0; k < kPlanted; ++k) {
    const size_t rest = (kPlanted - k - 1) * frame::kHeaderBytes + tail;  // to the end of the file
    std::vector<uint8_t> planted(built.bytes.begin() + static_cast<ptrdiff_t>(at),
                                 built.bytes.begin() + static_cast<ptrdiff_t>(at + frame::kHeaderBytes));
    const uint32_t length = static_cast<uint32_t>(rest);
    std::memcpy(planted.data() + 8, &length, 4);
    ASSERT_TRUE(frame::parseHeader(planted.data())) << "the planted header must parse, or it costs nothing";
    bytes.insert(bytes.end(), planted.begin(), planted.end());
  }
  bytes.insert(bytes.end(), built.bytes.begin() + static_cast<ptrdiff_t>(at), built.bytes.end());
  const std::string path = testing::pathIn(dir, "planted.ctrace");
  testing::writeFile(path, bytes);
  const auto start = std::chrono::steady_clock::now();
  ReadBack back = testing::readTrace(path);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(back.opened) << back.error;
  EXPECT_LT(seconds, 20.0);
  expectChunks(built, back, {0, 1});
  ASSERT_FALSE(back.reader->issues().empty());
  EXPECT_NE(back.reader->issues().back().message.find("too dense"), std::string::npos) << back.reader->issues().back().message;
}

// A chunk of more records than kMaxChunkRows (8 MB of packed zeros read as 8M rows held
// 1.5 GB in dump) is damage: refused, the chunks around it read.
TEST(ReaderCorruption, AChunkOfMoreRecordsThanAnyWriterMakesIsRefused) {
  TempDir dir;
  RecordSlot tiny{}, other{};
  tiny.kind = RecordKind::kClockSample;
  other.kind = RecordKind::kDropSummary;
  std::vector<RecordSlot> huge(kMaxChunkRows / 2 + 1, tiny);  // two tables, each under the limit, more than it together
  huge.insert(huge.end(), kMaxChunkRows / 2 + 1, other);
  const std::vector<std::vector<RecordSlot>> chunks = {{tiny}, huge, {tiny}};
  const BuiltTrace built = testing::buildTrace(chunks);
  const std::string path = testing::pathIn(dir, "huge.ctrace");
  testing::writeFile(path, built.bytes);
  ReadBack back = testing::readTrace(path);
  ASSERT_TRUE(back.opened) << back.error;
  ASSERT_EQ(back.reader->issues().size(), 1u);
  EXPECT_NE(back.reader->issues()[0].message.find("more than 1048576 records in one chunk"), std::string::npos)
      << back.reader->issues()[0].message;
  expectChunks(built, back, {0, 2});
}

TEST(ReaderCorruption, EveryFlippedByteIsReportedAndCostsOnlyItsChunkAndThoseNamedInIt) {
  TempDir dir;
  const BuiltTrace built = smallTrace();
  ASSERT_GE(built.chunk_begin.size(), 3u);
  const std::string path = testing::pathIn(dir, "flipped.ctrace");
  for (const uint8_t mask : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xFF}}) {
    for (uint64_t o = 0; o < built.bytes.size(); ++o) {
      SCOPED_TRACE("byte " + std::to_string(o) + " ^ " + std::to_string(mask));
      std::vector<uint8_t> bytes = built.bytes;
      bytes[o] ^= mask;
      testing::writeFile(path, bytes);
      ReadBack back = testing::readTrace(path);
      const int damaged = chunkAt(built, o);
      if (damaged < 0) {
        expectHeaderDamageHandled(built, path, back);
        continue;
      }
      ASSERT_TRUE(back.opened) << back.error;
      const std::vector<size_t> lost = lostWith(built, static_cast<size_t>(damaged));
      std::vector<size_t> intact;
      for (size_t k = 0; k < built.chunk_begin.size(); ++k) {
        if (std::find(lost.begin(), lost.end(), k) == lost.end()) intact.push_back(k);
      }
      expectChunks(built, back, intact);
      const auto& issues = back.reader->issues();
      const bool last = static_cast<size_t>(damaged) + 1 == built.chunk_begin.size();
      if (last && issues.empty()) {
        // The last frame's length field now runs past the end of the file, as the chunk an
        // open file's writer is writing does: the file reads as open, not damaged.
        EXPECT_EQ(back.reader->state(), TraceReader::State::kOpen);
        EXPECT_GE(o, built.chunk_begin[damaged] + 8);
        EXPECT_LT(o, built.chunk_begin[damaged] + 12);
        EXPECT_TRUE(back.reader->tornTail());
        if (::testing::Test::HasFailure()) return;
        continue;
      }
      ASSERT_EQ(issues.size(), lost.size());
      for (size_t i = 0; i < lost.size(); ++i) {
        EXPECT_EQ(issues[i].offset, built.chunk_begin[lost[i]]);
        EXPECT_EQ(issues[i].message.rfind(offsetMessagePrefix(path, built.chunk_begin[lost[i]]), 0), 0u) << issues[i].message;
      }
      if (lost.size() > 1) {
        EXPECT_NE(issues[1].message.find("its names are in an earlier chunk that is missing"), std::string::npos);
      }
      EXPECT_EQ(back.reader->tornTail(), static_cast<size_t>(damaged) + 1 == built.chunk_begin.size());
      if (::testing::Test::HasFailure()) return;  // one offset's story is enough
    }
  }
}

// A long file: the string table starts afresh every kChunksPerStringTable chunks. A
// damaged chunk that carried strings costs the chunks up to the next fresh table, no
// further; one that carried none costs only itself.
TEST(ReaderCorruption, ADamagedChunkCostsNoChunkPastTheNextFreshStringTable) {
  constexpr size_t kEvery = ChunkEncoder::kChunksPerStringTable;
  testing::SlotGenerator gen(7);
  std::vector<std::vector<RecordSlot>> chunks(2 * kEvery + 10);
  for (auto& c : chunks) {
    for (int i = 0; i < 3; ++i) c.push_back(gen.make(RecordKind::kColl, 10));
  }
  const BuiltTrace built = testing::buildTrace(chunks);
  size_t adding = 0, quiet = 0;  // chunks in the first table that did / did not carry strings
  for (size_t k = 0; k < chunks.size(); ++k) {
    EXPECT_EQ(built.fresh_strings[k], k % kEvery == 0) << k;
    if (k > 0 && k < kEvery && built.adds_strings[k] && adding == 0) adding = k;
    if (k > 0 && k < kEvery && !built.adds_strings[k] && quiet == 0) quiet = k;
  }
  ASSERT_TRUE(adding != 0 && quiet != 0) << "the stream needs chunks of both kinds";

  TempDir dir;
  const std::string path = testing::pathIn(dir, "long.ctrace");
  for (const size_t damaged : {adding, quiet}) {
    SCOPED_TRACE("chunk " + std::to_string(damaged));
    std::vector<uint8_t> bytes = built.bytes;
    bytes[built.chunk_begin[damaged] + frame::kHeaderBytes] ^= 0xFF;
    testing::writeFile(path, bytes);
    ReadBack back = testing::readTrace(path);
    const size_t lost_until = damaged == adding ? kEvery : damaged + 1;
    std::vector<size_t> intact;
    for (size_t k = 0; k < chunks.size(); ++k) {
      if (k < damaged || k >= lost_until) intact.push_back(k);
    }
    expectChunks(built, back, intact);
    EXPECT_EQ(back.reader->issues().size(), lost_until - damaged);
  }
}

// Cut at every offset: the complete chunks are read. A file whose writer marks its last
// chunk reads as open, its cut frame as the chunk being written (no issue); one of a writer
// that does not mark it reports the cut frame as a torn tail.
void expectEveryTruncationRead(bool marks_closing) {
  TempDir dir;
  FileHeaderFields header = testing::testHeader();
  header.marks_closing = marks_closing;
  const BuiltTrace built = smallTrace(header);
  const std::string path = testing::pathIn(dir, "truncated.ctrace");
  for (uint64_t size = 0; size < built.bytes.size(); ++size) {
    SCOPED_TRACE("truncated to " + std::to_string(size) + " bytes");
    testing::writeFile(path, built.bytes.data(), size);
    ReadBack back = testing::readTrace(path);
    if (size < built.header_end) {
      ASSERT_FALSE(back.opened);
      EXPECT_EQ(back.error.rfind("commtrace: " + path, 0), 0u) << back.error;
      continue;
    }
    ASSERT_TRUE(back.opened) << back.error;
    std::vector<size_t> complete;
    for (size_t k = 0; k < built.chunk_end.size(); ++k) {
      if (built.chunk_end[k] <= size) complete.push_back(k);
    }
    expectChunks(built, back, complete);
    const bool at_frame_boundary = size == built.header_end || (!complete.empty() && built.chunk_end[complete.back()] == size);
    const auto& issues = back.reader->issues();
    EXPECT_EQ(back.reader->state(), !marks_closing ? TraceReader::State::kUnknown
                                    : complete.size() == built.chunk_end.size() ? TraceReader::State::kClosed
                                                                                : TraceReader::State::kOpen);
    if (at_frame_boundary) {
      EXPECT_TRUE(issues.empty()) << issues.front().message;
      EXPECT_FALSE(back.reader->tornTail());
    } else if (marks_closing) {
      EXPECT_TRUE(issues.empty()) << issues.front().message;
      EXPECT_TRUE(back.reader->tornTail());
    } else {
      const uint64_t torn_at = built.chunk_begin[complete.size()];
      ASSERT_EQ(issues.size(), 1u);
      EXPECT_EQ(issues[0].offset, torn_at);
      EXPECT_EQ(issues[0].message.rfind(offsetMessagePrefix(path, torn_at), 0), 0u) << issues[0].message;
      EXPECT_NE(issues[0].message.find("torn tail"), std::string::npos) << issues[0].message;
      EXPECT_TRUE(back.reader->tornTail());
    }
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(ReaderCorruption, TruncatedAtEveryOffsetKeepsCompleteChunks) {
  expectEveryTruncationRead(true);
  expectEveryTruncationRead(false);
}

TEST(ReaderCorruption, GarbageBetweenFramesIsSkipped) {
  TempDir dir;
  const BuiltTrace built = smallTrace();
  const std::string path = testing::pathIn(dir, "garbage.ctrace");
  std::mt19937_64 rng(3);
  for (size_t boundary = 0; boundary < built.chunk_begin.size(); ++boundary) {
    for (size_t length : {1, 3, 4, 15, 16, 17, 200}) {
      SCOPED_TRACE("garbage of " + std::to_string(length) + " bytes before chunk " + std::to_string(boundary));
      std::vector<uint8_t> garbage(length);
      for (auto& b : garbage) b = static_cast<uint8_t>(rng());
      if (length >= 4) std::memcpy(garbage.data(), frame::kMagic, 4);  // even a magic that leads nowhere
      std::vector<uint8_t> bytes = built.bytes;
      const uint64_t at = built.chunk_begin[boundary];
      bytes.insert(bytes.begin() + static_cast<ptrdiff_t>(at), garbage.begin(), garbage.end());
      testing::writeFile(path, bytes);
      ReadBack back = testing::readTrace(path);
      ASSERT_TRUE(back.opened) << back.error;
      ASSERT_EQ(back.chunks.size(), built.chunk_begin.size());
      for (size_t k = 0; k < back.chunks.size(); ++k) {
        EXPECT_EQ(back.chunks[k].index, k);
        EXPECT_EQ(back.chunks[k].offset, built.chunk_begin[k] + (k >= boundary ? length : 0));
        const std::string d = testing::diffChunk(built.expected[k], back.chunks[k], *back.reader);
        ASSERT_TRUE(d.empty()) << d;
      }
      ASSERT_EQ(back.reader->issues().size(), 1u);
      EXPECT_EQ(back.reader->issues()[0].offset, at);
      EXPECT_NE(back.reader->issues()[0].message.find("skipped " + std::to_string(length) + " bytes"), std::string::npos)
          << back.reader->issues()[0].message;
      EXPECT_FALSE(back.reader->tornTail());
    }
  }
}

// Frames with a correct CRC whose content is wrong: another writer's bug, not bit rot.
TEST(ReaderCorruption, InconsistentChunksAreReportedAndSkipped) {
  TempDir dir;
  const BuiltTrace good = smallTrace();
  std::vector<std::pair<std::string, std::string>> bad;  // what, serialized payload
  {
    trace::v1::Chunk c;
    c.set_index(90);
    c.add_strings("");
    auto* coll = c.mutable_coll();
    coll->add_shape(0);
    coll->add_shape(5);  // no shape 5
    coll->add_thread(1);
    bad.push_back({"a row refers to a missing shape", c.SerializeAsString()});
  }
  {
    // A shape index from a mutated file: sizing shape columns by it asked for ~32 GB.
    trace::v1::Chunk c;
    c.set_index(94);
    c.add_strings("");
    auto* coll = c.mutable_coll();
    coll->add_shape(4004805506u);
    coll->add_thread(1);
    bad.push_back({"a shape index far past the rows", c.SerializeAsString()});
  }
  {
    trace::v1::Chunk c;
    c.set_index(91);
    c.add_strings("");
    auto* clock = c.mutable_clock_sample();
    clock->add_thread(1);
    clock->add_thread(2);
    clock->add_monotonic_ns(5);  // one value for two rows
    bad.push_back({"columns of different lengths", c.SerializeAsString()});
  }
  {
    trace::v1::Chunk c;
    c.set_index(92);
    c.add_strings("");
    auto* info = c.mutable_comm_info();
    info->add_thread(1);
    info->add_comm_id(1);
    info->add_cpu_ns(1);
    info->add_comm_name(7);  // no string 7
    for (auto* col : {info->mutable_n_nodes(), info->mutable_n_ranks(), info->mutable_rank(),
                      info->mutable_global_rank(), info->mutable_cuda_device()}) {
      col->Add(1);
    }
    bad.push_back({"a missing string", c.SerializeAsString()});
  }
  {
    trace::v1::Chunk c;
    c.set_index(93);
    c.add_strings("");
    auto* drop = c.mutable_drop_summary();
    for (auto* col : {drop->mutable_thread(), drop->mutable_dropped_kind(), drop->mutable_ring_full(),
                      drop->mutable_sink_failed()}) {
      col->Add(1);
    }
    drop->add_cpu_ns(1);
    auto* scale = drop->add_scale();
    scale->set_field(5);
    scale->set_shift(64);
    bad.push_back({"a scale past 63 bits", c.SerializeAsString()});
  }
  bad.push_back({"a payload that is not protobuf", std::string("\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\x01", 11)});

  for (const auto& [what, payload] : bad) {
    SCOPED_TRACE(what);
    // good header and chunks 0 and 1, the bad chunk, good chunks 2 and 3
    std::vector<uint8_t> bytes(good.bytes.begin(), good.bytes.begin() + static_cast<ptrdiff_t>(good.chunk_begin[2]));
    const uint64_t bad_at = bytes.size();
    frame::append(bytes, frame::Type::kChunk, 0,
                  std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(payload.data()), payload.size()));
    const uint64_t shift = bytes.size() - bad_at;
    bytes.insert(bytes.end(), good.bytes.begin() + static_cast<ptrdiff_t>(good.chunk_begin[2]), good.bytes.end());
    const std::string path = testing::pathIn(dir, "inconsistent.ctrace");
    testing::writeFile(path, bytes);
    ReadBack back = testing::readTrace(path);
    ASSERT_TRUE(back.opened) << back.error;
    ASSERT_EQ(back.chunks.size(), 4u);
    for (size_t k = 0; k < 4; ++k) {
      EXPECT_EQ(back.chunks[k].index, k);
      EXPECT_EQ(back.chunks[k].offset, good.chunk_begin[k] + (k >= 2 ? shift : 0));
      const std::string d = testing::diffChunk(good.expected[k], back.chunks[k], *back.reader);
      EXPECT_TRUE(d.empty()) << d;
    }
    ASSERT_EQ(back.reader->issues().size(), 1u);
    EXPECT_EQ(back.reader->issues()[0].offset, bad_at);
    EXPECT_EQ(back.reader->issues()[0].message.rfind(offsetMessagePrefix(path, bad_at), 0), 0u)
        << back.reader->issues()[0].message;
    EXPECT_FALSE(back.reader->tornTail());
  }
}

TEST(ReaderCorruption, ForeignFilesAreRefusedWithAClearMessage) {
  TempDir dir;
  std::mt19937_64 rng(17);
  std::vector<uint8_t> random(4096);
  for (auto& b : random) b = static_cast<uint8_t>(rng());
  const std::string text = "step,loss\n1,2.5\n2,2.25\n";
  std::vector<uint8_t> magic_only(frame::kMagic, frame::kMagic + 4);
  // A valid frame that is a chunk, not a file header.
  std::vector<uint8_t> chunk_first;
  frame::append(chunk_first, frame::Type::kChunk, 0, std::vector<uint8_t>{0x08, 0x01});

  const std::vector<std::pair<std::string, std::vector<uint8_t>>> files = {
      {"random.bin", random},
      {"losses.csv", std::vector<uint8_t>(text.begin(), text.end())},
      {"magic-only.ctrace", magic_only},
      {"chunk-first.ctrace", chunk_first},
  };
  for (const auto& [name, bytes] : files) {
    SCOPED_TRACE(name);
    const std::string path = testing::pathIn(dir, name);
    testing::writeFile(path, bytes);
    TraceReader reader;
    std::string error;
    EXPECT_FALSE(reader.open(path, error));
    EXPECT_EQ(error.rfind("commtrace: " + path, 0), 0u) << error;
    EXPECT_NE(error.find("not a commtrace trace"), std::string::npos) << error;
    DecodedChunk chunk;
    EXPECT_FALSE(reader.next(chunk)) << "a refused file yields no chunks";
  }
  // A process killed between creating its file and writing the header leaves an empty one.
  const std::string empty = testing::pathIn(dir, "empty.ctrace");
  testing::writeFile(empty, std::vector<uint8_t>{});
  TraceReader empty_reader;
  std::string empty_error;
  EXPECT_FALSE(empty_reader.open(empty, empty_error));
  EXPECT_EQ(empty_error, "commtrace: " + empty + " is empty: its writer died before writing the file header");
  for (const std::string& path : {dir.path(), testing::pathIn(dir, "does-not-exist.ctrace")}) {
    SCOPED_TRACE(path);
    TraceReader reader;
    std::string error;
    EXPECT_FALSE(reader.open(path, error));
    EXPECT_EQ(error.rfind("commtrace: ", 0), 0u) << error;
    EXPECT_NE(error.find(path), std::string::npos) << error;
  }
}

TEST(ReaderCorruption, NewerFormatVersionIsRefused) {
  TempDir dir;
  const BuiltTrace good = smallTrace();
  trace::v1::FileHeader header;
  ASSERT_TRUE(header.ParseFromArray(good.bytes.data() + frame::kHeaderBytes,
                                    static_cast<int>(good.header_end - frame::kHeaderBytes)));
  ASSERT_EQ(header.format_version(), schema::kFormatVersion);

  for (const uint32_t version : {schema::kFormatVersion, schema::kFormatVersion + 1, 1000u}) {
    SCOPED_TRACE("format_version " + std::to_string(version));
    header.set_format_version(version);
    const std::string payload = header.SerializeAsString();
    std::vector<uint8_t> bytes;
    frame::append(bytes, frame::Type::kFileHeader, 0,
                  std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(payload.data()), payload.size()));
    bytes.insert(bytes.end(), good.bytes.begin() + static_cast<ptrdiff_t>(good.header_end), good.bytes.end());
    const std::string path = testing::pathIn(dir, "v" + std::to_string(version) + ".ctrace");
    testing::writeFile(path, bytes);
    ReadBack back = testing::readTrace(path);
    if (version <= schema::kFormatVersion) {
      ASSERT_TRUE(back.opened) << back.error;
      EXPECT_EQ(back.chunks.size(), good.chunk_begin.size());
      continue;
    }
    ASSERT_FALSE(back.opened);
    EXPECT_EQ(back.error.rfind("commtrace: " + path, 0), 0u) << back.error;
    EXPECT_NE(back.error.find("format version " + std::to_string(version)), std::string::npos) << back.error;
    DecodedChunk chunk;
    EXPECT_FALSE(back.reader->next(chunk)) << "chunks of a newer format must not be decoded with this schema";
  }
}

}  // namespace
}  // namespace commtrace
