// Every record kind and every field survives write -> read: through the chunk encoder and
// frames written to a file, and through a real Flusher fed by producer threads.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <thread>
#include <tuple>

#include "sink/flusher.h"
#include "tests/support/sink_test_support.h"
#include "tools/synthetic/fsdp_stream.h"

namespace commtrace {
namespace {

using testing::BuiltTrace;
using testing::SlotGenerator;
using testing::TempDir;

#if defined(__has_builtin)
#if __has_builtin(__builtin_clear_padding)
#define CT_HAS_CLEAR_PADDING 1
#endif
#endif

// sizeof the record struct of each kind, to check the schema covers all of it.
size_t recordSize(RecordKind kind) {
  RecordSlot slot{};
  slot.kind = kind;
  size_t size = 0;
  visitRecord(slot, [&](const auto& r) { size = sizeof r; });
  return size;
}

// The payload bytes of a kind that hold a field (true) rather than padding (false).
std::vector<bool> fieldBytes(RecordKind kind) {
  RecordSlot slot;
  std::memset(&slot, 0xFF, sizeof slot);
  slot.kind = kind;
#ifdef CT_HAS_CLEAR_PADDING
  visitRecord(slot, [](auto& r) { __builtin_clear_padding(&r); });
#endif
  const auto* p = reinterpret_cast<const uint8_t*>(&slot.payload);
  std::vector<bool> out(recordSize(kind));
  for (size_t i = 0; i < out.size(); ++i) out[i] = p[i] != 0;
  return out;
}

TEST(SinkRoundTrip, EveryRecordFieldIsAColumn) {
#ifndef CT_HAS_CLEAR_PADDING
  GTEST_SKIP() << "needs __builtin_clear_padding to tell fields from padding";
#endif
  constexpr size_t kPayload = offsetof(RecordSlot, payload);
  for (const schema::Table& t : schema::allTables()) {
    SCOPED_TRACE(t.name);
    const std::vector<bool> is_field = fieldBytes(t.kind);
    std::vector<int> covered(is_field.size(), 0);
    bool has_thread_header = false;
    for (const schema::Column& c : t.columns) {
      if (c.offset == offsetof(RecordSlot, thread)) {
        has_thread_header = true;
        EXPECT_EQ(c.width, 4);
        continue;
      }
      ASSERT_GE(c.offset, kPayload) << c.name;
      ASSERT_LE(c.offset + c.width - kPayload, is_field.size()) << c.name << " lies outside the record";
      for (size_t b = c.offset - kPayload; b < c.offset + c.width - kPayload; ++b) ++covered[b];
    }
    for (size_t b = 0; b < is_field.size(); ++b) {
      EXPECT_LE(covered[b], 1) << "byte " << b << " belongs to two columns";
      EXPECT_EQ(covered[b] == 1, is_field[b]) << "byte " << b << (is_field[b] ? " of a field has no column" : " is padding but has a column");
    }
    // Drop summaries name the dropping thread in the record; every other kind keeps the
    // producing thread from the slot header.
    EXPECT_EQ(has_thread_header, t.kind != RecordKind::kDropSummary);
  }
}

// Records where every column of every kind takes each of its extreme values at least
// once, the other columns random.
std::vector<RecordSlot> extremeRecords(SlotGenerator& gen) {
  std::vector<RecordSlot> out;
  for (const schema::Table& t : schema::allTables()) {
    for (size_t ci = 0; ci < t.columns.size(); ++ci) {
      const schema::Column& c = t.columns[ci];
      std::vector<uint64_t> values;
      if (c.codec == schema::Codec::kString) {
        values = {StringTable::global().intern(""), StringTable::global().intern(std::string(255, 'z'))};
      } else {
        values = testing::extremeValues(c.width);
      }
      for (uint64_t v : values) {
        RecordSlot s = gen.make(t.kind, 1000 + static_cast<uint32_t>(out.size() % 3));
        schema::store(s, c, v);
        out.push_back(s);
        // The same value again with every other column at the same extreme: runs of equal
        // and of maximal deltas.
        RecordSlot all = s;
        for (const schema::Column& o : t.columns) {
          if (o.codec != schema::Codec::kString) schema::store(all, o, v);
        }
        out.push_back(all);
      }
    }
  }
  return out;
}

void expectRoundTrip(const std::vector<std::vector<RecordSlot>>& chunks, const std::string& path) {
  const BuiltTrace built = testing::buildTrace(chunks);
  testing::writeFile(path, built.bytes);
  testing::ReadBack back = testing::readTrace(path);
  ASSERT_TRUE(back.opened) << back.error;
  EXPECT_TRUE(back.reader->issues().empty()) << back.reader->issues().front().message;
  EXPECT_FALSE(back.reader->tornTail());
  ASSERT_EQ(back.chunks.size(), chunks.size());
  for (size_t i = 0; i < chunks.size(); ++i) {
    EXPECT_EQ(back.chunks[i].index, i);
    EXPECT_EQ(back.chunks[i].offset, built.chunk_begin[i]);
    const std::string d = testing::diffChunk(built.expected[i], back.chunks[i], *back.reader);
    EXPECT_TRUE(d.empty()) << d;
  }
}

TEST(SinkRoundTrip, ExtremeValuesOfEveryColumnOfEveryKind) {
  TempDir dir;
  SlotGenerator gen(1);
  const std::vector<RecordSlot> records = extremeRecords(gen);
  ASSERT_GT(records.size(), 1000u);
  // All in one chunk, and the same records in reverse (every delta flips sign).
  std::vector<RecordSlot> reversed(records.rbegin(), records.rend());
  expectRoundTrip({records, reversed}, testing::pathIn(dir, "extreme.ctrace"));
}

TEST(SinkRoundTrip, OneRecordOfEachKindAlone) {
  TempDir dir;
  SlotGenerator gen(2);
  std::vector<std::vector<RecordSlot>> chunks;
  for (const schema::Table& t : schema::allTables()) chunks.push_back({gen.make(t.kind, 7)});
  chunks.push_back({});  // an empty chunk is still a chunk
  expectRoundTrip(chunks, testing::pathIn(dir, "single.ctrace"));
}

TEST(SinkRoundTrip, ZeroRecordIsAllZeroAfterReading) {
  TempDir dir;
  std::vector<RecordSlot> zeros;
  for (const schema::Table& t : schema::allTables()) {
    RecordSlot s{};
    s.kind = t.kind;
    zeros.push_back(s);
    zeros.push_back(s);
  }
  expectRoundTrip({zeros}, testing::pathIn(dir, "zeros.ctrace"));
}

TEST(SinkRoundTrip, ManyShapesAndStringsFromInterleavedThreads) {
  TempDir dir;
  SlotGenerator gen(3);
  gen.addDistinctStrings("roundtrip-shape", 2000);  // chunk string indices past one varint byte
  constexpr uint32_t kThreads = 8;
  constexpr size_t kChunkRecords = 1000;
  std::vector<RecordSlot> stream;
  for (int i = 0; i < 20'500; ++i) stream.push_back(gen.make(gen.anyKind(), 50'000 + static_cast<uint32_t>(gen.rng()() % kThreads)));
  std::vector<std::vector<RecordSlot>> chunks;
  for (size_t begin = 0; begin < stream.size(); begin += kChunkRecords) {
    chunks.emplace_back(stream.begin() + static_cast<ptrdiff_t>(begin),
                        stream.begin() + static_cast<ptrdiff_t>(std::min(stream.size(), begin + kChunkRecords)));
  }
  ASSERT_EQ(chunks.back().size(), 500u);  // the last chunk is cut short
  expectRoundTrip(chunks, testing::pathIn(dir, "interleaved.ctrace"));
}

// Strings are bytes, not text: NVTX range names and comm names come from the user, and the
// string table cuts them at 255 bytes, which can split a UTF-8 character. Such a string
// must not cost the chunk that holds it.
TEST(SinkRoundTrip, NamesThatAreNotValidUtf8Survive) {
  TempDir dir;
  std::string accents;
  for (int i = 0; i < 200; ++i) accents += "\xC3\xA9";  // 'e' with acute accent, 400 bytes
  const StringId cut = StringTable::global().intern(accents);
  ASSERT_EQ(StringTable::global().lookup(cut).size(), StringTable::kMaxLength);  // ends mid-character
  const StringId latin1 = StringTable::global().intern("caf\xE9 comm");
  std::vector<RecordSlot> records;
  RecordSlot phase{};
  phase.kind = RecordKind::kPhaseRange;
  phase.thread = 1;
  phase.payload.phase_range.name = cut;
  phase.payload.phase_range.domain = latin1;
  records.push_back(phase);
  RecordSlot comm{};
  comm.kind = RecordKind::kCommInfo;
  comm.thread = 1;
  comm.payload.comm_info.comm_name = latin1;
  records.push_back(comm);
  expectRoundTrip({records}, testing::pathIn(dir, "utf8.ctrace"));
}

// Linux paths and host names are bytes too: a program under /home/jos\xE9 (Latin-1) must
// not make the whole file unreadable.
TEST(SinkRoundTrip, FileHeaderWithAProgramPathThatIsNotUtf8) {
  TempDir dir;
  FileHeaderFields header = testing::testHeader();
  header.program = "/home/jos\xE9/train.py";
  header.identity.job_id = "job-\xFF";
  const BuiltTrace built = testing::buildTrace({{}}, header);
  const std::string path = testing::pathIn(dir, "latin1.ctrace");
  testing::writeFile(path, built.bytes);
  testing::ReadBack back = testing::readTrace(path);
  ASSERT_TRUE(back.opened) << back.error;
  EXPECT_EQ(back.reader->header().program(), header.program);
  EXPECT_EQ(back.reader->header().job_id(), header.identity.job_id);
  EXPECT_EQ(back.chunks.size(), 1u);
}

// The comparison the other tests rely on sees a change in any column.
TEST(SinkRoundTrip, RecordComparisonSeesEveryColumn) {
  TempDir dir;
  SlotGenerator gen(11);
  std::vector<RecordSlot> records;
  for (const schema::Table& t : schema::allTables()) records.push_back(gen.make(t.kind, 9));
  const BuiltTrace built = testing::buildTrace({records});
  testing::writeFile(testing::pathIn(dir, "cmp.ctrace"), built.bytes);
  testing::ReadBack back = testing::readTrace(testing::pathIn(dir, "cmp.ctrace"));
  ASSERT_TRUE(back.opened) << back.error;
  ASSERT_EQ(back.chunks.size(), 1u);
  const auto& got = back.chunks[0].records;
  ASSERT_EQ(got.size(), records.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const RecordSlot& want = built.expected[0][i];
    ASSERT_EQ(testing::diffRecord(want, got[i], *back.reader), "");
    for (const schema::Column& c : schema::tableFor(want.kind)->columns) {
      RecordSlot changed = got[i];
      const uint64_t other = c.codec == schema::Codec::kString
                                 ? (schema::load(changed, c) == 0 ? 1 : 0)
                                 : schema::load(changed, c) ^ 1;
      schema::store(changed, c, other);
      EXPECT_NE(testing::diffRecord(want, changed, *back.reader), "") << c.name;
    }
  }
}

TEST(SinkRoundTrip, TimesGoingBackwardsGiveNegativeDeltas) {
  TempDir dir;
  std::vector<RecordSlot> records;
  uint64_t t = 5'000'000'000;
  for (int i = 0; i < 200; ++i) {
    RecordSlot s{};
    s.kind = RecordKind::kColl;
    s.thread = 77;
    CollRecord& c = s.payload.coll;
    c.comm_id = 0xABCDEF;
    c.func = StringTable::global().intern(i % 2 ? "AllReduce" : "AllGather");
    c.seq = 1000 - static_cast<uint64_t>(i);  // keyed deltas going down
    c.op_index = static_cast<uint64_t>(i) * 3;
    t = i % 3 == 0 ? t - 7'000 : t + 1'000;   // CPU clock stepping back
    c.cpu_start_ns = t;
    c.cpu_end_ns = t - 10;                     // end before start: negative ref difference
    c.gpu_start_ns = i % 5 == 0 ? 0 : t + 50;  // unknown (0) GPU times in between
    c.gpu_end_ns = i % 5 == 0 ? 0 : t - 1;
    c.root = -1 - i;
    records.push_back(s);
  }
  expectRoundTrip({records}, testing::pathIn(dir, "backwards.ctrace"));
}

TEST(SinkRoundTrip, RealisticFsdpStream) {
  TempDir dir;
  synthetic::FsdpStream stream({.rank = 3, .world_size = 8, .layers = 12, .seed = 9});
  std::vector<std::vector<RecordSlot>> chunks(4);
  for (auto& chunk : chunks) {
    for (int i = 0; i < 700; ++i) {
      RecordSlot s{};
      s.kind = RecordKind::kColl;
      s.thread = 4242;
      s.payload.coll = stream.next();
      chunk.push_back(s);
    }
  }
  expectRoundTrip(chunks, testing::pathIn(dir, "fsdp.ctrace"));
}

// The same records through the real path: producer threads push into their rings, the
// flusher drains them into chunks of at most chunk_records rows.
TEST(SinkRoundTrip, ThroughFlusherFromSeveralThreads) {
  TempDir dir;
  constexpr int kThreads = 4;
  constexpr int kPerThread = 6000;
  constexpr uint32_t kChunkRecords = 257;

  std::vector<std::vector<RecordSlot>> planned(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    SlotGenerator gen(100 + static_cast<uint64_t>(t));
    for (int i = 0; i < kPerThread; ++i) planned[t].push_back(gen.make(gen.anyKind(), 0));
  }

  FlusherOptions options;
  options.dir = testing::pathIn(dir, "run");
  options.flush_period_ms = 5;
  options.chunk_records = kChunkRecords;
  options.identity.rank = 3;
  options.identity.world_size = 8;
  options.identity.job_id = "roundtrip";
  Flusher flusher(options);
  ASSERT_TRUE(flusher.start());

  std::vector<uint32_t> tids(kThreads);
  std::vector<std::thread> producers;
  for (int t = 0; t < kThreads; ++t) {
    producers.emplace_back([&, t] {
      tids[t] = static_cast<uint32_t>(gettid());
      for (const RecordSlot& s : planned[t]) {
        while (testing::recordSlot(s) == PushResult::kDropped) std::this_thread::yield();
      }
    });
  }
  for (auto& p : producers) p.join();
  flusher.stop();
  const FlusherStats stats = flusher.stats();
  EXPECT_EQ(stats.sinkFailedTotal(), 0u);

  testing::ReadBack back = testing::readTrace(flusher.path());
  ASSERT_TRUE(back.opened) << back.error;
  EXPECT_TRUE(back.reader->issues().empty());
  const auto& h = back.reader->header();
  EXPECT_EQ(h.format_version(), schema::kFormatVersion);
  EXPECT_EQ(h.rank(), 3);
  EXPECT_EQ(h.world_size(), 8);
  EXPECT_EQ(h.job_id(), "roundtrip");
  EXPECT_EQ(h.pid(), getpid());
  EXPECT_EQ(h.flush_period_ms(), 5u);
  EXPECT_EQ(h.cpu_clock(), "CLOCK_MONOTONIC");

  ASSERT_EQ(back.chunks.size(), stats.chunks_written);
  uint64_t rows = 0;
  size_t full_chunks = 0;
  // Per (thread, kind), the records in push order; drop summaries carry no slot thread.
  std::map<std::pair<uint32_t, RecordKind>, std::vector<const RecordSlot*>> got;
  std::vector<const RecordSlot*> got_drops;
  const std::set<uint32_t> producer_tids(tids.begin(), tids.end());
  for (size_t i = 0; i < back.chunks.size(); ++i) {
    const DecodedChunk& chunk = back.chunks[i];
    EXPECT_EQ(chunk.index, i);
    EXPECT_LE(chunk.records.size(), kChunkRecords);
    full_chunks += chunk.records.size() == kChunkRecords;
    rows += chunk.records.size();
    for (const RecordSlot& s : chunk.records) {
      if (s.kind == RecordKind::kDropSummary) {
        got_drops.push_back(&s);
      } else if (producer_tids.count(s.thread)) {
        got[{s.thread, s.kind}].push_back(&s);
      } else {
        EXPECT_EQ(s.kind, RecordKind::kClockSample) << "a record from an unknown thread " << s.thread;
      }
    }
  }
  EXPECT_EQ(rows, stats.records_written);
  EXPECT_GT(full_chunks, 0u) << "no chunk was cut at chunk_records";
  ASSERT_FALSE(back.chunks.empty());
  EXPECT_EQ(stats.bytes_written, back.reader->size() - back.chunks.front().offset);

  std::vector<const RecordSlot*> want_drops;
  size_t compared = 0;
  for (int t = 0; t < kThreads; ++t) {
    std::map<RecordKind, std::vector<const RecordSlot*>> want;
    for (const RecordSlot& s : planned[t]) {
      if (s.kind == RecordKind::kDropSummary) {
        want_drops.push_back(&s);
      } else {
        want[s.kind].push_back(&s);
      }
    }
    for (const auto& [kind, records] : want) {
      const auto& read = got[{tids[t], kind}];
      ASSERT_EQ(read.size(), records.size()) << "thread " << t << " kind " << static_cast<int>(kind);
      for (size_t i = 0; i < records.size(); ++i) {
        RecordSlot expected = *records[i];
        expected.thread = tids[t];  // the ring stamps the producer's tid
        const std::string d = testing::diffRecord(expected, *read[i], *back.reader);
        ASSERT_TRUE(d.empty()) << "thread " << t << " record " << i << ": " << d;
        ++compared;
      }
    }
  }
  // Drop summaries from all threads: same multiset of resolved records.
  ASSERT_EQ(got_drops.size(), want_drops.size());
  auto key = [](const RecordSlot& s) {
    const DropSummaryRecord& d = s.payload.drop_summary;
    return std::tuple(d.thread, d.dropped_kind, d.ring_full, d.sink_failed, d.cpu_ns);
  };
  std::multiset<decltype(key(RecordSlot{}))> want_set, got_set;
  for (const RecordSlot* s : want_drops) want_set.insert(key(*s));
  for (const RecordSlot* s : got_drops) got_set.insert(key(*s));
  EXPECT_TRUE(want_set == got_set);
  EXPECT_EQ(compared + want_drops.size(), static_cast<size_t>(kThreads * kPerThread));
}

}  // namespace
}  // namespace commtrace
