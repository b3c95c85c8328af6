// The chunk reader's wire parse (chunk_wire.h) against libprotobuf's generated classes: the
// same columns, strings and fields as ParseFromArray and reflection give, on the chunks the
// encoder writes, on encodings it does not use but a protobuf writer may (unpacked repeated
// fields, a table split in two, fields this reader does not know), and on damaged bytes,
// where it must refuse exactly what ParseFromArray refuses.
#include "sink/chunk_wire.h"

#include <gtest/gtest.h>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/reflection.h>

#include <random>
#include <string>
#include <vector>

#include "sink/chunk_encoder.h"
#include "sink/commtrace.pb.h"
#include "tests/support/sink_test_support.h"

namespace commtrace {
namespace {

namespace pb = google::protobuf;

// A repeated integer field of a message as reflection hands it over, widened to uint64.
std::vector<uint64_t> reflected(const pb::Message& m, uint32_t number) {
  const pb::FieldDescriptor* f = m.GetDescriptor()->FindFieldByNumber(static_cast<int>(number));
  const pb::Reflection* r = m.GetReflection();
  std::vector<uint64_t> out;
  if (f == nullptr) return out;
  for (int i = 0; i < r->FieldSize(m, f); ++i) {
    switch (f->cpp_type()) {
      case pb::FieldDescriptor::CPPTYPE_UINT64: out.push_back(r->GetRepeatedUInt64(m, f, i)); break;
      case pb::FieldDescriptor::CPPTYPE_INT64: out.push_back(static_cast<uint64_t>(r->GetRepeatedInt64(m, f, i))); break;
      case pb::FieldDescriptor::CPPTYPE_UINT32: out.push_back(r->GetRepeatedUInt32(m, f, i)); break;
      default: ADD_FAILURE() << f->full_name();
    }
  }
  return out;
}

// Every field parseChunk fills, compared with the parsed message.
void expectSameAsParsed(const trace::v1::Chunk& chunk, const WireChunk& wire) {
  EXPECT_EQ(wire.index, chunk.index());
  EXPECT_EQ(wire.strings_before, chunk.strings_before());
  EXPECT_EQ(wire.strings_since, chunk.strings_since());
  EXPECT_EQ(wire.closing, chunk.closing());
  ASSERT_EQ(wire.strings.size(), static_cast<size_t>(chunk.strings_size()));
  for (int i = 0; i < chunk.strings_size(); ++i) EXPECT_EQ(wire.strings[static_cast<size_t>(i)], chunk.strings(i));
  const pb::Reflection* cr = chunk.GetReflection();
  const auto tables = schema::allTables();
  ASSERT_EQ(wire.tables.size(), tables.size());
  for (size_t t = 0; t < tables.size(); ++t) {
    SCOPED_TRACE(tables[t].name);
    const pb::FieldDescriptor* tf = chunk.GetDescriptor()->FindFieldByNumber(static_cast<int>(tables[t].chunk_field));
    const WireTable& got = wire.tables[t];
    ASSERT_EQ(got.present, cr->HasField(chunk, tf));
    if (!got.present) continue;
    const pb::Message& table = cr->GetMessage(chunk, tf);
    for (size_t c = 0; c < tables[t].columns.size(); ++c)
      EXPECT_EQ(got.columns[c], reflected(table, tables[t].columns[c].number)) << tables[t].columns[c].name;
    if (tables[t].has_shape()) {
      EXPECT_EQ(got.row_shape, reflected(table, schema::kShapeField));
    }
    const pb::FieldDescriptor* sparse = table.GetDescriptor()->FindFieldByNumber(static_cast<int>(schema::kSparseField));
    const int n_sparse = sparse != nullptr ? table.GetReflection()->FieldSize(table, sparse) : 0;
    ASSERT_EQ(got.sparse_count, static_cast<size_t>(n_sparse));
    for (int e = 0; e < n_sparse; ++e) {
      const auto& s = static_cast<const trace::v1::SparseColumn&>(table.GetReflection()->GetRepeatedMessage(table, sparse, e));
      EXPECT_EQ(got.sparse[static_cast<size_t>(e)].field, s.field());
      EXPECT_EQ(got.sparse[static_cast<size_t>(e)].rows, std::vector<uint64_t>(s.rows().begin(), s.rows().end()));
      EXPECT_EQ(got.sparse[static_cast<size_t>(e)].values, std::vector<uint64_t>(s.values().begin(), s.values().end()));
    }
    const pb::FieldDescriptor* scale = table.GetDescriptor()->FindFieldByNumber(static_cast<int>(schema::kScaleField));
    const int n_scale = table.GetReflection()->FieldSize(table, scale);
    ASSERT_EQ(got.scales.size(), static_cast<size_t>(n_scale));
    for (int e = 0; e < n_scale; ++e) {
      const auto& s = static_cast<const trace::v1::ColumnScale&>(table.GetReflection()->GetRepeatedMessage(table, scale, e));
      EXPECT_EQ(got.scales[static_cast<size_t>(e)], std::make_pair(s.field(), s.shift()));
    }
  }
}

wire::Bytes encodedChunk(uint64_t seed, int records) {
  testing::SlotGenerator gen(seed);
  ChunkEncoder encoder(StringTable::global());
  for (int i = 0; i < records; ++i) encoder.add(gen.make(gen.anyKind(), 300 + static_cast<uint32_t>(i % 3)));
  wire::Bytes payload;
  encoder.finish(9, true, payload);
  return payload;
}

void expectParsesAsLibprotobufDoes(std::span<const uint8_t> bytes, const std::string& what) {
  SCOPED_TRACE(what);
  trace::v1::Chunk chunk;
  WireChunk wire;
  const bool parsed = chunk.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
  ASSERT_EQ(parseChunk(bytes, wire), parsed);
  if (parsed) expectSameAsParsed(chunk, wire);
}

TEST(ChunkWire, ReadsWhatTheEncoderWritesAsTheGeneratedClassesDo) {
  for (uint64_t seed : {1, 2, 3}) {
    const wire::Bytes payload = encodedChunk(seed, 2000);
    expectParsesAsLibprotobufDoes(payload, "seed " + std::to_string(seed));
  }
}

// A protobuf writer may repeat a field unpacked, split a message in two (the parts merge),
// and add fields this reader does not know (skipped, as libprotobuf keeps them aside).
TEST(ChunkWire, ReadsEncodingsOtherProtobufWritersMayUse) {
  trace::v1::Chunk chunk;
  chunk.set_index(4);
  chunk.add_strings("");
  chunk.add_strings("AllReduce");
  trace::v1::CollTable& coll = *chunk.mutable_coll();
  for (uint64_t r = 0; r < 3; ++r) {
    coll.add_shape(0);
    coll.add_seq(static_cast<int64_t>(r) - 1);
    coll.add_cpu_start_ns(static_cast<int64_t>(r * 1000));
  }
  coll.add_func(1);
  coll.add_comm_id(0xfeed);
  chunk.mutable_p2p();  // present, empty
  std::string bytes = chunk.SerializeAsString();
  // The same coll table again (repeated fields concatenate), unpacked, with a field no table
  // declares and a Chunk field no version declares.
  std::string more;
  {
    pb::io::StringOutputStream raw(&more);
    pb::io::CodedOutputStream out(&raw);
    std::string table;
    {
      pb::io::StringOutputStream table_raw(&table);
      pb::io::CodedOutputStream t(&table_raw);
      pb::internal::WireFormatLite::WriteUInt32(1, 0, &t);   // shape, one value unpacked
      pb::internal::WireFormatLite::WriteSInt64(20, -7, &t);  // seq
      pb::internal::WireFormatLite::WriteString(77, "unknown", &t);
      pb::internal::WireFormatLite::WriteFixed64(88, 5, &t);
    }
    pb::internal::WireFormatLite::WriteBytes(trace::v1::Chunk::kCollFieldNumber, table, &out);
    pb::internal::WireFormatLite::WriteUInt64(1000, 1, &out);
  }
  bytes += more;
  const std::span<const uint8_t> span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  expectParsesAsLibprotobufDoes(span, "merged, unpacked, unknown fields");
  WireChunk wire;
  ASSERT_TRUE(parseChunk(span, wire));
  EXPECT_EQ(wire.tables[0].row_shape.size(), 4u);
  EXPECT_TRUE(wire.tables[1].present);
}

// The packed columns' varints are decoded by hand: at their limits (ten bytes, bits past
// 64, a varint running past its run or past ten bytes) they read as libprotobuf reads them.
TEST(ChunkWire, PackedVarintsAtTheirLimitsReadAsLibprotobufReadsThem) {
  const std::vector<std::pair<std::vector<uint8_t>, bool>> runs = {
      {{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01}, true},         // 2^64 - 1 in ten bytes
      {{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F}, true},         // bits past 64, dropped
      {{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, false},  // eleven bytes
      {{0x05, 0x96, 0x01, 0x80}, false},                                            // runs past its run
      {{0x01, 0x02, 0x03}, true},
      {{}, true},
  };
  for (const auto& [run, valid] : runs) {
    std::string table, bytes;
    {
      pb::io::StringOutputStream table_raw(&table);
      pb::io::CodedOutputStream t(&table_raw);
      t.WriteTag(pb::internal::WireFormatLite::MakeTag(20, pb::internal::WireFormatLite::WIRETYPE_LENGTH_DELIMITED));  // seq
      t.WriteVarint32(static_cast<uint32_t>(run.size()));
      if (!run.empty()) t.WriteRaw(run.data(), static_cast<int>(run.size()));  // an empty vector's data() is null
    }
    {
      pb::io::StringOutputStream raw(&bytes);
      pb::io::CodedOutputStream out(&raw);
      pb::internal::WireFormatLite::WriteBytes(trace::v1::Chunk::kCollFieldNumber, table, &out);
    }
    const std::span<const uint8_t> span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    expectParsesAsLibprotobufDoes(span, "a run of " + std::to_string(run.size()) + " bytes");
    WireChunk wire;
    EXPECT_EQ(parseChunk(span, wire), valid) << run.size() << " bytes";
  }
}

// Cut short or with bytes flipped, a chunk parses exactly when libprotobuf parses it, and
// then into the same values.
TEST(ChunkWire, DamagedBytesAreRefusedExactlyWhenLibprotobufRefusesThem) {
  const wire::Bytes payload = encodedChunk(5, 300);
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 4000; ++trial) {
    std::vector<uint8_t> damaged(payload.begin(), payload.end());
    if (trial % 2 == 0) {
      damaged.resize(rng() % damaged.size());
    } else {
      for (int flips = 1 + static_cast<int>(rng() % 3); flips > 0; --flips) damaged[rng() % damaged.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
    }
    expectParsesAsLibprotobufDoes(damaged, "trial " + std::to_string(trial));
    if (HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace commtrace
