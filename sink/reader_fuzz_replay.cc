// Runs the reader fuzz target (reader_fuzz.cc) on a fixed, seeded set of damaged versions of
// a valid trace, so every build checks what the libFuzzer build explores: byte-level damage
// (flips, overwrites, insertions, deletions, truncation, frames copied elsewhere, absurd
// lengths) and structural damage (chunks that parse but whose columns disagree), each frame
// with a valid CRC so the damage reaches the decoder. A broken invariant aborts.
#include <gtest/gtest.h>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/reflection.h>

#include <random>

#include "sink/commtrace.pb.h"
#include "tests/support/sink_test_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace commtrace {
namespace {

namespace pb = google::protobuf;

// A file with every kind in each of three chunks.
testing::BuiltTrace seedTrace() {
  testing::SlotGenerator gen(77);
  std::vector<std::vector<RecordSlot>> chunks(3);
  for (auto& chunk : chunks) {
    for (const schema::Table& t : schema::allTables()) {
      for (int i = 0; i < 3; ++i) chunk.push_back(gen.make(t.kind, 100 + static_cast<uint32_t>(i)));
    }
  }
  return testing::buildTrace(chunks);
}

void putLe32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

void mutateBytes(std::vector<uint8_t>& b, const testing::BuiltTrace& seed, std::mt19937_64& rng) {
  auto pos = [&](size_t extra = 0) { return b.empty() ? 0 : static_cast<size_t>(rng() % (b.size() + extra)); };
  switch (rng() % 9) {
    case 0:  // flip bits
      for (int i = 0, n = 1 + static_cast<int>(rng() % 8); i < n && !b.empty(); ++i) b[pos()] ^= static_cast<uint8_t>(1u << (rng() % 8));
      break;
    case 1: {  // interesting byte
      static constexpr uint8_t kValues[] = {0, 1, 0x7F, 0x80, 0xFF};
      if (!b.empty()) b[pos()] = kValues[rng() % 5];
      break;
    }
    case 2: {  // overwrite a range with random bytes
      const size_t at = pos();
      for (size_t i = at, n = std::min(b.size(), at + 1 + rng() % 64); i < n; ++i) b[i] = static_cast<uint8_t>(rng());
      break;
    }
    case 3: {  // insert random bytes
      std::vector<uint8_t> extra(1 + rng() % 40);
      for (auto& x : extra) x = static_cast<uint8_t>(rng());
      b.insert(b.begin() + static_cast<ptrdiff_t>(pos(1)), extra.begin(), extra.end());
      break;
    }
    case 4: {  // erase a range
      const size_t at = pos();
      b.erase(b.begin() + static_cast<ptrdiff_t>(at), b.begin() + static_cast<ptrdiff_t>(std::min(b.size(), at + 1 + rng() % 64)));
      break;
    }
    case 5:  // truncate
      b.resize(pos());
      break;
    case 6: {  // copy a frame of the seed to a random place
      const size_t k = rng() % seed.chunk_begin.size();
      b.insert(b.begin() + static_cast<ptrdiff_t>(pos(1)), seed.bytes.begin() + static_cast<ptrdiff_t>(seed.chunk_begin[k]),
               seed.bytes.begin() + static_cast<ptrdiff_t>(seed.chunk_end[k]));
      break;
    }
    case 7: {  // an absurd length in a frame header
      static constexpr uint32_t kLengths[] = {0, 1, 15, 16, 0xFFFF, frame::kMaxPayload, frame::kMaxPayload + 1, 0xFFFFFFFF};
      const size_t k = rng() % seed.chunk_begin.size();
      if (seed.chunk_begin[k] + 12 <= b.size()) putLe32(b.data() + seed.chunk_begin[k] + 8, kLengths[rng() % 8]);
      break;
    }
    default: {  // a frame header's type or flags
      const size_t k = rng() % seed.chunk_begin.size();
      if (seed.chunk_begin[k] + 8 <= b.size()) b[seed.chunk_begin[k] + 4 + rng() % 4] = static_cast<uint8_t>(rng() % 4);
      break;
    }
  }
}

TEST(ReaderFuzzReplay, ByteMutationsOfAValidFile) {
  const testing::BuiltTrace seed = seedTrace();
  ASSERT_EQ(LLVMFuzzerTestOneInput(seed.bytes.data(), seed.bytes.size()), 0);
  std::mt19937_64 rng(20240601);
  for (int i = 0; i < 2000; ++i) {
    std::vector<uint8_t> bytes = seed.bytes;
    for (int m = 0, n = 1 + static_cast<int>(rng() % 4); m < n; ++m) mutateBytes(bytes, seed, rng);
    ASSERT_EQ(LLVMFuzzerTestOneInput(bytes.data(), bytes.size()), 0);
  }
}

// A random change to one column of one table: a value added, removed or replaced, or a
// sparse or scale entry pointing anywhere.
void mutateChunk(trace::v1::Chunk& chunk, std::mt19937_64& rng) {
  const pb::Reflection* cr = chunk.GetReflection();
  std::vector<const pb::FieldDescriptor*> present;
  cr->ListFields(chunk, &present);
  std::vector<const pb::FieldDescriptor*> tables;
  for (const pb::FieldDescriptor* f : present) {
    if (f->type() == pb::FieldDescriptor::TYPE_MESSAGE) tables.push_back(f);
  }
  if (rng() % 8 == 0 || tables.empty()) {  // the string table
    if (chunk.strings_size() > 0 && rng() % 2) {
      chunk.mutable_strings()->RemoveLast();
    } else {
      chunk.add_strings(std::string(rng() % 3, 'q'));
    }
    return;
  }
  pb::Message* table = cr->MutableMessage(&chunk, tables[rng() % tables.size()]);
  const pb::Descriptor* d = table->GetDescriptor();
  const pb::Reflection* r = table->GetReflection();
  const pb::FieldDescriptor* f = d->field(static_cast<int>(rng() % static_cast<uint64_t>(d->field_count())));
  static constexpr uint64_t kValues[] = {0, 1, 2, 63, 64, 255, 1u << 31, ~0ull, 1ull << 63};
  const uint64_t v = rng() % 2 ? kValues[rng() % 9] : rng();
  if (f->type() == pb::FieldDescriptor::TYPE_MESSAGE) {
    pb::Message* entry = r->AddMessage(table, f);
    const pb::Descriptor* ed = entry->GetDescriptor();
    const pb::Reflection* er = entry->GetReflection();
    for (int i = 0; i < ed->field_count(); ++i) {
      const pb::FieldDescriptor* ef = ed->field(i);
      const uint64_t x = i == 0 ? rng() % 30 : (rng() % 2 ? kValues[rng() % 9] : rng() % 70);
      if (ef->is_repeated()) {
        for (int n = static_cast<int>(rng() % 4); n > 0; --n) er->AddUInt64(entry, ef, x + static_cast<uint64_t>(n));
      } else {
        er->SetUInt32(entry, ef, static_cast<uint32_t>(x));
      }
    }
    return;
  }
  const int n = r->FieldSize(*table, f);
  const int op = static_cast<int>(rng() % 3);
  if (op == 0 && n > 0) {
    r->RemoveLast(table, f);
    return;
  }
  switch (f->cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_UINT32:
      if (op == 1 && n > 0) r->SetRepeatedUInt32(table, f, static_cast<int>(rng() % static_cast<uint64_t>(n)), static_cast<uint32_t>(v));
      else r->AddUInt32(table, f, static_cast<uint32_t>(v));
      break;
    case pb::FieldDescriptor::CPPTYPE_UINT64:
      if (op == 1 && n > 0) r->SetRepeatedUInt64(table, f, static_cast<int>(rng() % static_cast<uint64_t>(n)), v);
      else r->AddUInt64(table, f, v);
      break;
    case pb::FieldDescriptor::CPPTYPE_INT64:
      if (op == 1 && n > 0) r->SetRepeatedInt64(table, f, static_cast<int>(rng() % static_cast<uint64_t>(n)), static_cast<int64_t>(v));
      else r->AddInt64(table, f, static_cast<int64_t>(v));
      break;
    default:
      break;
  }
}

TEST(ReaderFuzzReplay, StructuralMutationsOfChunks) {
  const testing::BuiltTrace seed = seedTrace();
  std::vector<trace::v1::Chunk> chunks(seed.chunk_begin.size());
  for (size_t k = 0; k < chunks.size(); ++k) {
    const uint8_t* payload = seed.bytes.data() + seed.chunk_begin[k] + frame::kHeaderBytes;
    ASSERT_TRUE(chunks[k].ParseFromArray(payload, static_cast<int>(seed.chunk_end[k] - seed.chunk_begin[k] - frame::kHeaderBytes)));
  }
  std::mt19937_64 rng(99);
  for (int i = 0; i < 2000; ++i) {
    std::vector<uint8_t> bytes(seed.bytes.begin(), seed.bytes.begin() + static_cast<ptrdiff_t>(seed.header_end));
    for (const trace::v1::Chunk& original : chunks) {
      trace::v1::Chunk chunk = original;
      if (rng() % 2) {
        for (int m = 0, n = 1 + static_cast<int>(rng() % 3); m < n; ++m) mutateChunk(chunk, rng);
      }
      const std::string payload = chunk.SerializeAsString();
      frame::append(bytes, frame::Type::kChunk, 0,
                    std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(payload.data()), payload.size()));
    }
    ASSERT_EQ(LLVMFuzzerTestOneInput(bytes.data(), bytes.size()), 0);
  }
}

// With COMMTRACE_FUZZ_CORPUS=DIR, writes seed inputs for the libFuzzer target there.
TEST(ReaderFuzzReplay, WriteCorpus) {
  const char* dir = getenv("COMMTRACE_FUZZ_CORPUS");
  if (dir == nullptr || *dir == '\0') GTEST_SKIP() << "COMMTRACE_FUZZ_CORPUS not set";
  std::filesystem::remove_all(dir);  // libFuzzer adds what it finds: start each run afresh
  std::filesystem::create_directories(dir);
  const testing::BuiltTrace seed = seedTrace();
  testing::writeFile(std::string(dir) + "/seed.ctrace", seed.bytes);
  testing::writeFile(std::string(dir) + "/seed-torn.ctrace", seed.bytes.data(), seed.bytes.size() - 5);
  std::vector<uint8_t> one_chunk(seed.bytes.begin(), seed.bytes.begin() + static_cast<ptrdiff_t>(seed.chunk_end[0]));
  testing::writeFile(std::string(dir) + "/seed-one-chunk.ctrace", one_chunk);
}

}  // namespace
}  // namespace commtrace
