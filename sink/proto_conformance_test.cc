// The schema table (sink/schema.cc) and commtrace.proto describe the same format: every
// column's name, number and proto type match its codec, the table's structure is one the
// encoder and reader can follow, the comments in the .proto say what the table does, and
// every chunk the hand-written encoder emits parses with the libprotobuf generated classes
// into the values that were written.
#include <gtest/gtest.h>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/reflection.h>

#include <fstream>
#include <map>
#include <sstream>
#include <set>

#include "sink/commtrace.pb.h"
#include "sink/flusher.h"
#include "tests/support/sink_test_support.h"

namespace commtrace {
namespace {

namespace pb = google::protobuf;
using schema::Codec;
using schema::Column;
using schema::Table;

const pb::Descriptor* tableMessage(const Table& t) {
  return trace::v1::Chunk::descriptor()->file()->FindMessageTypeByName(t.message);
}

pb::FieldDescriptor::Type protoTypeOf(Codec codec) {
  switch (codec) {
    case Codec::kPlain: return pb::FieldDescriptor::TYPE_UINT64;
    case Codec::kSigned:
    case Codec::kDelta: return pb::FieldDescriptor::TYPE_SINT64;
    case Codec::kString: return pb::FieldDescriptor::TYPE_UINT32;
  }
  return pb::FieldDescriptor::TYPE_GROUP;
}

TEST(ProtoConformance, ChunkHoldsEveryTableUnderItsName) {
  const pb::Descriptor* chunk = trace::v1::Chunk::descriptor();
  std::set<uint32_t> numbers;
  for (const Table& t : schema::allTables()) {
    SCOPED_TRACE(t.name);
    EXPECT_EQ(schema::tableFor(t.kind), &t);
    const pb::FieldDescriptor* f = chunk->FindFieldByNumber(static_cast<int>(t.chunk_field));
    ASSERT_NE(f, nullptr) << "Chunk has no field " << t.chunk_field;
    EXPECT_EQ(f->name(), t.name);
    ASSERT_EQ(f->type(), pb::FieldDescriptor::TYPE_MESSAGE);
    EXPECT_FALSE(f->is_repeated());
    EXPECT_EQ(f->message_type()->name(), t.message);
    EXPECT_TRUE(numbers.insert(t.chunk_field).second);
  }
  // index, strings, strings_before, strings_since, closing and one field per table: nothing
  // the schema does not know.
  EXPECT_EQ(chunk->field_count(), 5 + static_cast<int>(schema::allTables().size()));
  const pb::FieldDescriptor* index = chunk->FindFieldByName("index");
  ASSERT_NE(index, nullptr);
  EXPECT_EQ(index->number(), 1);
  EXPECT_EQ(index->type(), pb::FieldDescriptor::TYPE_UINT64);
  const pb::FieldDescriptor* strings = chunk->FindFieldByName("strings");
  ASSERT_NE(strings, nullptr);
  EXPECT_EQ(strings->number(), 2);
  EXPECT_TRUE(strings->is_repeated());
  const pb::FieldDescriptor* strings_before = chunk->FindFieldByName("strings_before");
  ASSERT_NE(strings_before, nullptr);
  EXPECT_EQ(strings_before->number(), 3);  // the encoder writes field 3 by number
  EXPECT_EQ(strings_before->type(), pb::FieldDescriptor::TYPE_UINT64);
  const pb::FieldDescriptor* strings_since = chunk->FindFieldByName("strings_since");
  ASSERT_NE(strings_since, nullptr);
  EXPECT_EQ(strings_since->number(), 4);
  EXPECT_EQ(strings_since->type(), pb::FieldDescriptor::TYPE_UINT64);
  const pb::FieldDescriptor* version = trace::v1::FileHeader::descriptor()->FindFieldByName("format_version");
  ASSERT_NE(version, nullptr);
  EXPECT_EQ(version->number(), 1);
  EXPECT_EQ(version->type(), pb::FieldDescriptor::TYPE_UINT32);
}

// Every record kind has its table, and the table says whether the live collector reads it:
// what a process sends in its digests is read from there, not from a list of its own.
TEST(ProtoConformance, EveryRecordKindHasATableThatSaysWhetherItIsLive) {
  std::set<RecordKind> live;
  for (int k = 1; k < kRecordKindCount; ++k) {
    const RecordKind kind = static_cast<RecordKind>(k);
    const schema::Table* table = schema::tableFor(kind);
    ASSERT_NE(table, nullptr) << "kind " << k;
    EXPECT_EQ(table->kind, kind);
    EXPECT_EQ(isLiveKind(kind), table->live) << table->name;
    if (isLiveKind(kind)) live.insert(kind);
  }
  EXPECT_EQ(live, (std::set<RecordKind>{RecordKind::kColl, RecordKind::kP2p, RecordKind::kCommInfo, RecordKind::kInFlight,
                                        RecordKind::kDropSummary, RecordKind::kClockSample}))
      << "ops, communicators, ops in flight, drops and clocks";
}

TEST(ProtoConformance, EveryColumnMatchesItsProtoField) {
  for (const Table& t : schema::allTables()) {
    SCOPED_TRACE(t.name);
    const pb::Descriptor* m = tableMessage(t);
    ASSERT_NE(m, nullptr) << "no message " << t.message;
    std::set<int> accounted;
    for (const Column& c : t.columns) {
      SCOPED_TRACE(c.name);
      const pb::FieldDescriptor* f = m->FindFieldByNumber(static_cast<int>(c.number));
      ASSERT_NE(f, nullptr) << t.message << " has no field " << c.number;
      EXPECT_EQ(f->name(), c.name);
      EXPECT_EQ(f->type(), protoTypeOf(c.codec)) << "proto type " << f->type_name();
      EXPECT_TRUE(f->is_repeated());
      EXPECT_TRUE(f->is_packed());
      EXPECT_TRUE(accounted.insert(f->number()).second) << "two columns use field " << c.number;
    }
    const pb::FieldDescriptor* shape = m->FindFieldByNumber(static_cast<int>(schema::kShapeField));
    if (t.has_shape()) {
      ASSERT_NE(shape, nullptr);
      EXPECT_EQ(shape->name(), "shape");
      EXPECT_EQ(shape->type(), pb::FieldDescriptor::TYPE_UINT32);
      EXPECT_TRUE(shape->is_repeated());
      EXPECT_TRUE(accounted.insert(shape->number()).second) << "a column uses the shape field";
    } else {
      EXPECT_EQ(m->FindFieldByName("shape"), nullptr) << "a table without shape columns has a shape field";
    }
    // The side lists: sparse columns in tables with shapes, scales in every table.
    const pb::FieldDescriptor* sparse = m->FindFieldByNumber(static_cast<int>(schema::kSparseField));
    if (t.has_shape()) {
      ASSERT_NE(sparse, nullptr);
      EXPECT_EQ(sparse->name(), "sparse");
      EXPECT_TRUE(sparse->is_repeated());
      ASSERT_EQ(sparse->type(), pb::FieldDescriptor::TYPE_MESSAGE);
      EXPECT_EQ(sparse->message_type(), trace::v1::SparseColumn::descriptor());
      accounted.insert(sparse->number());
    }
    const pb::FieldDescriptor* scale = m->FindFieldByNumber(static_cast<int>(schema::kScaleField));
    ASSERT_NE(scale, nullptr);
    EXPECT_EQ(scale->name(), "scale");
    EXPECT_TRUE(scale->is_repeated());
    ASSERT_EQ(scale->type(), pb::FieldDescriptor::TYPE_MESSAGE);
    EXPECT_EQ(scale->message_type(), trace::v1::ColumnScale::descriptor());
    accounted.insert(scale->number());
    for (int i = 0; i < m->field_count(); ++i) {
      EXPECT_TRUE(accounted.count(m->field(i)->number())) << t.message << "." << m->field(i)->name() << " is in the .proto but not in the schema";
    }
  }
  const pb::Descriptor* sparse = trace::v1::SparseColumn::descriptor();
  EXPECT_EQ(sparse->FindFieldByNumber(static_cast<int>(schema::kSparseColumnField))->name(), "field");
  EXPECT_EQ(sparse->FindFieldByNumber(static_cast<int>(schema::kSparseRowsField))->name(), "rows");
  EXPECT_EQ(sparse->FindFieldByNumber(static_cast<int>(schema::kSparseValuesField))->name(), "values");
  const pb::Descriptor* scale = trace::v1::ColumnScale::descriptor();
  EXPECT_EQ(scale->FindFieldByNumber(static_cast<int>(schema::kScaleColumnField))->name(), "field");
  EXPECT_EQ(scale->FindFieldByNumber(static_cast<int>(schema::kScaleShiftField))->name(), "shift");
}

// The structure the encoder and reader rely on: a row is decoded column by column, so every
// column a prediction uses comes earlier; groups are made of shape columns.
TEST(ProtoConformance, PredictionsOnlyUseEarlierColumns) {
  for (const Table& t : schema::allTables()) {
    SCOPED_TRACE(t.name);
    ASSERT_LE(t.columns.size(), 32u);
    bool seen_row_column = false;
    for (size_t i = 0; i < t.columns.size(); ++i) {
      const Column& c = t.columns[i];
      SCOPED_TRACE(c.name);
      EXPECT_TRUE(c.width == 1 || c.width == 2 || c.width == 4 || c.width == 8);
      EXPECT_LE(c.offset + c.width, sizeof(RecordSlot));
      if (c.in_shape) {
        EXPECT_FALSE(seen_row_column) << "shape columns come first";
        EXPECT_NE(c.codec, Codec::kDelta) << "a shape column holds values, not deltas";
      } else {
        seen_row_column = true;
      }
      if (c.codec != Codec::kDelta) {
        EXPECT_EQ(c.ref_column, -1);
        EXPECT_FALSE(c.row_delta);
        EXPECT_EQ(c.group, 0u);
        EXPECT_EQ(c.step, 0);
        continue;
      }
      if (c.ref_column >= 0) {
        EXPECT_LT(static_cast<size_t>(c.ref_column), i) << "ref_column must precede its column";
        EXPECT_NE(t.columns[c.ref_column].codec, Codec::kString) << "a time minus a string index means nothing";
      }
      for (uint32_t bits = c.group; bits != 0; bits &= bits - 1) {
        const int g = __builtin_ctz(bits);
        ASSERT_LT(static_cast<size_t>(g), i) << "group column " << g << " does not precede its column";
        EXPECT_TRUE(t.columns[g].in_shape) << "group column " << t.columns[g].name << " is not a shape column";
      }
      if (c.step != 0) {
        EXPECT_NE(c.group, 0u) << "a step needs a group";
      }
    }
  }
}

// What the comments in commtrace.proto say about each column: [shape], and its codec
// (plain, signed, string, or predicted(...) with its stages).
struct ProtoLine {
  std::string type, name, comment;
  int number;
};

struct ProtoMessage {
  std::vector<ProtoLine> fields;
};

std::string trimmed(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

// Reads the messages of commtrace.proto and their `repeated TYPE NAME = N; // comment` lines.
std::map<std::string, ProtoMessage> parseProtoMessages() {
  std::ifstream in(COMMTRACE_PROTO_PATH);
  std::map<std::string, ProtoMessage> out;
  std::string raw, current;
  while (std::getline(in, raw)) {
    const std::string line = trimmed(raw);
    if (line.rfind("message ", 0) == 0) {
      std::istringstream words(line.substr(8));
      words >> current;
      if (!current.empty() && current.back() == '{') current.pop_back();
      out[current];
    } else if (line.rfind("}", 0) == 0) {
      current.clear();
    } else if (!current.empty() && line.rfind("repeated ", 0) == 0) {
      const size_t slash = line.find("//");
      std::istringstream words(line.substr(0, slash));
      ProtoLine field;
      std::string repeated, eq, number;
      words >> repeated >> field.type >> field.name >> eq >> number;
      field.number = std::atoi(number.c_str());
      field.comment = slash == std::string::npos ? "" : trimmed(line.substr(slash + 2));
      out[current].fields.push_back(field);
    }
  }
  return out;
}

// The comment a predicted column must carry, in the grammar commtrace.proto documents:
// predicted(ref F; row; group A,B | group shape; step N), present stages only.
std::string predictionComment(const Table& t, const Column& c) {
  std::vector<std::string> stages;
  if (c.ref_column >= 0) stages.push_back(std::string("ref ") + t.columns[c.ref_column].name);
  if (c.row_delta) stages.push_back("row");
  if (c.group != 0) {
    uint32_t shape = 0;
    for (size_t i = 0; i < t.columns.size(); ++i) shape |= t.columns[i].in_shape ? 1u << i : 0;
    std::string group;
    for (uint32_t bits = c.group; bits != 0; bits &= bits - 1) {
      group += (group.empty() ? "" : ",") + std::string(t.columns[__builtin_ctz(bits)].name);
    }
    stages.push_back("group " + (c.group == shape ? std::string("shape") : group));
    if (c.step != 0) stages.push_back("step " + std::to_string(c.step));
  }
  std::string out = "predicted(";
  for (size_t i = 0; i < stages.size(); ++i) out += (i ? "; " : "") + stages[i];
  return out + ")";
}

TEST(ProtoConformance, ProtoCommentsDescribeEachColumn) {
  const auto messages = parseProtoMessages();
  ASSERT_FALSE(messages.empty()) << "cannot read " << COMMTRACE_PROTO_PATH;
  for (const Table& t : schema::allTables()) {
    SCOPED_TRACE(t.message);
    auto it = messages.find(t.message);
    ASSERT_NE(it, messages.end());
    for (const Column& c : t.columns) {
      SCOPED_TRACE(c.name);
      const ProtoLine* line = nullptr;
      for (const ProtoLine& l : it->second.fields) {
        if (l.name == c.name) line = &l;
      }
      ASSERT_NE(line, nullptr);
      EXPECT_EQ(line->number, static_cast<int>(c.number));
      std::string comment = line->comment;
      const bool marked_shape = comment.rfind("[shape]", 0) == 0;
      EXPECT_EQ(marked_shape, c.in_shape) << "comment: " << comment;
      if (marked_shape) comment = trimmed(comment.substr(7));
      const std::string word = comment.substr(0, comment.find_first_of(" :"));
      switch (c.codec) {
        case Codec::kPlain: EXPECT_EQ(word, "plain"); break;
        case Codec::kSigned: EXPECT_EQ(word, "signed"); break;
        case Codec::kString: EXPECT_EQ(word, "string"); break;
        case Codec::kDelta:
          EXPECT_EQ(comment.substr(0, comment.find(')') + 1), predictionComment(t, c));
          break;
      }
    }
  }
}

// ---- A chunk the encoder writes, read with the generated classes ----

// A row column as documented: dense, or a SparseColumn entry, or all zero when absent;
// multiplied back by its ColumnScale. Values in the uint64 domain (sint64 unzigzagged).
std::vector<uint64_t> documentedColumn(const pb::Message& table, const Column& c, size_t rows, bool shaped) {
  const pb::Reflection* r = table.GetReflection();
  const pb::Descriptor* d = table.GetDescriptor();
  const pb::FieldDescriptor* f = d->FindFieldByNumber(static_cast<int>(c.number));
  std::vector<uint64_t> out;
  for (int i = 0; i < r->FieldSize(table, f); ++i) {
    switch (f->type()) {
      case pb::FieldDescriptor::TYPE_UINT64: out.push_back(r->GetRepeatedUInt64(table, f, i)); break;
      case pb::FieldDescriptor::TYPE_SINT64: out.push_back(static_cast<uint64_t>(r->GetRepeatedInt64(table, f, i))); break;
      case pb::FieldDescriptor::TYPE_UINT32: out.push_back(r->GetRepeatedUInt32(table, f, i)); break;
      default: ADD_FAILURE() << "unexpected type of " << c.name;
    }
  }
  if (c.in_shape) return out;
  if (shaped && out.empty()) {
    out.assign(rows, 0);
    const pb::FieldDescriptor* sparse = d->FindFieldByNumber(static_cast<int>(schema::kSparseField));
    for (int e = 0; e < r->FieldSize(table, sparse); ++e) {
      const auto& s = static_cast<const trace::v1::SparseColumn&>(r->GetRepeatedMessage(table, sparse, e));
      if (s.field() != c.number) continue;
      EXPECT_EQ(s.rows_size(), s.values_size());
      size_t row = 0;
      for (int k = 0; k < s.rows_size() && k < s.values_size(); ++k) {
        row += s.rows(k);
        EXPECT_LT(row, rows);
        if (row >= rows) break;
        const uint64_t v = s.values(k);
        out[row] = f->type() == pb::FieldDescriptor::TYPE_SINT64 ? wire::unzigzag(v) : v;
      }
    }
  }
  EXPECT_EQ(out.size(), rows) << c.name;
  const pb::FieldDescriptor* scale = d->FindFieldByNumber(static_cast<int>(schema::kScaleField));
  for (int e = 0; e < r->FieldSize(table, scale); ++e) {
    const auto& s = static_cast<const trace::v1::ColumnScale&>(r->GetRepeatedMessage(table, scale, e));
    if (s.field() == c.number) {
      for (uint64_t& v : out) v <<= s.shift();
    }
  }
  return out;
}

bool noUnknownFields(const pb::Message& m, std::string& where) {
  const pb::Reflection* r = m.GetReflection();
  if (!r->GetUnknownFields(m).empty()) {
    where = m.GetDescriptor()->full_name();
    return false;
  }
  std::vector<const pb::FieldDescriptor*> fields;
  r->ListFields(m, &fields);
  for (const pb::FieldDescriptor* f : fields) {
    if (f->type() != pb::FieldDescriptor::TYPE_MESSAGE) continue;
    if (f->is_repeated()) {
      for (int i = 0; i < r->FieldSize(m, f); ++i) {
        if (!noUnknownFields(r->GetRepeatedMessage(m, f, i), where)) return false;
      }
    } else if (!noUnknownFields(r->GetMessage(m, f), where)) {
      return false;
    }
  }
  return true;
}

std::string textOf(const trace::v1::Chunk& chunk, const Column& c, uint64_t v) {
  if (c.codec != Codec::kString) return std::to_string(v);
  return v < static_cast<uint64_t>(chunk.strings_size()) ? chunk.strings(static_cast<int>(v)) : "<missing string>";
}

// The canonical text of a column value as written (strings resolved in the global table).
std::string textOf(const RecordSlot& s, const Column& c) {
  const uint64_t v = schema::load(s, c);
  if (c.codec != Codec::kString) return std::to_string(v);
  return std::string(StringTable::global().lookup(static_cast<StringId>(v)));
}

TEST(ProtoConformance, EncodedChunkParsesWithGeneratedClassesIntoTheSameValues) {
  testing::SlotGenerator gen(21);
  std::vector<RecordSlot> records;
  for (int i = 0; i < 3000; ++i) records.push_back(gen.make(gen.anyKind(), 300 + static_cast<uint32_t>(i % 3)));
  ChunkEncoder encoder(StringTable::global());
  for (const RecordSlot& s : records) encoder.add(s);
  wire::Bytes payload;
  encoder.finish(7, false, payload);

  trace::v1::Chunk chunk;
  ASSERT_TRUE(chunk.ParseFromArray(payload.data(), static_cast<int>(payload.size())));
  std::string where;
  EXPECT_TRUE(noUnknownFields(chunk, where)) << "the writer emits a field the .proto does not declare, in " << where;
  EXPECT_EQ(chunk.index(), 7u);
  ASSERT_GT(chunk.strings_size(), 0);
  EXPECT_EQ(chunk.strings(0), "");
  std::set<std::string> distinct(chunk.strings().begin(), chunk.strings().end());
  EXPECT_EQ(distinct.size(), static_cast<size_t>(chunk.strings_size())) << "a string appears twice in the chunk's table";

  const pb::Reflection* cr = chunk.GetReflection();
  for (const Table& t : schema::allTables()) {
    SCOPED_TRACE(t.name);
    std::vector<const RecordSlot*> rows;
    for (const RecordSlot& s : records) {
      if (s.kind == t.kind) rows.push_back(&s);
    }
    ASSERT_FALSE(rows.empty());
    const pb::FieldDescriptor* tf = chunk.GetDescriptor()->FindFieldByNumber(static_cast<int>(t.chunk_field));
    ASSERT_TRUE(cr->HasField(chunk, tf));
    const pb::Message& table = cr->GetMessage(chunk, tf);
    const bool shaped = t.has_shape();

    // Row count: the shape column in tables with shapes, every dense column otherwise.
    std::vector<uint64_t> row_shape;
    if (shaped) {
      const pb::FieldDescriptor* sf = table.GetDescriptor()->FindFieldByNumber(static_cast<int>(schema::kShapeField));
      for (int i = 0; i < table.GetReflection()->FieldSize(table, sf); ++i) {
        row_shape.push_back(table.GetReflection()->GetRepeatedUInt32(table, sf, i));
      }
      ASSERT_EQ(row_shape.size(), rows.size());
    }

    // Shapes: the distinct combinations of the shape columns, as text.
    std::set<std::vector<std::string>> want_shapes;
    for (const RecordSlot* s : rows) {
      std::vector<std::string> shape;
      for (const Column& c : t.columns) {
        if (c.in_shape) shape.push_back(textOf(*s, c));
      }
      if (shaped) want_shapes.insert(shape);
    }
    std::vector<std::vector<uint64_t>> columns;
    size_t n_shapes = 0;
    for (const Column& c : t.columns) {
      columns.push_back(documentedColumn(table, c, rows.size(), shaped));
      if (c.in_shape) n_shapes = columns.back().size();
    }
    if (shaped) {
      EXPECT_EQ(n_shapes, want_shapes.size()) << "one entry per distinct shape";
      std::set<std::vector<std::string>> got_shapes;
      for (size_t s = 0; s < n_shapes; ++s) {
        std::vector<std::string> shape;
        for (size_t i = 0; i < t.columns.size(); ++i) {
          if (!t.columns[i].in_shape) continue;
          ASSERT_EQ(columns[i].size(), n_shapes) << t.columns[i].name;
          shape.push_back(textOf(chunk, t.columns[i], columns[i][s]));
        }
        got_shapes.insert(shape);
      }
      EXPECT_EQ(got_shapes, want_shapes);
    }

    for (size_t r = 0; r < rows.size(); ++r) {
      const RecordSlot& s = *rows[r];
      for (size_t i = 0; i < t.columns.size(); ++i) {
        const Column& c = t.columns[i];
        SCOPED_TRACE(c.name);
        uint64_t stored;
        if (c.in_shape) {
          ASSERT_LT(row_shape[r], columns[i].size());
          stored = columns[i][row_shape[r]];
        } else {
          ASSERT_LT(r, columns[i].size());
          stored = columns[i][r];
        }
        const uint64_t value = schema::load(s, c);
        if (c.codec != Codec::kDelta) {
          ASSERT_EQ(textOf(chunk, c, stored), textOf(s, c)) << "row " << r;
          continue;
        }
        const uint64_t ref = c.ref_column >= 0 ? schema::load(s, t.columns[c.ref_column]) : 0;
        // The first row of a chunk is predicted from zero: only the ref and the group's
        // step are taken off. Without row or group prediction, every row is value - ref.
        if (r == 0) {
          ASSERT_EQ(stored, value - ref - (c.group != 0 ? c.step : 0)) << "first row";
        } else if (!c.row_delta && c.group == 0) {
          ASSERT_EQ(stored, value - ref) << "row " << r;
        }
      }
    }
  }
}

// The same with readable values: a few collectives whose encoded form is known.
TEST(ProtoConformance, CollectivesReadWithGeneratedAccessors) {
  StringTable& strings = StringTable::global();
  std::vector<RecordSlot> records;
  for (int i = 0; i < 4; ++i) {
    RecordSlot s{};
    s.kind = RecordKind::kColl;
    s.thread = 4321;
    CollRecord& c = s.payload.coll;
    c.comm_id = 0xC0FFEE;
    c.func = strings.intern(i < 3 ? "AllReduce" : "Broadcast");
    c.datatype = strings.intern("ncclFloat32");
    c.algo = strings.intern("RING");
    c.proto = strings.intern("SIMPLE");
    c.count = 1 << 20;
    c.bytes = 4 << 20;
    c.root = i < 3 ? -1 : 2;
    c.n_channels = 8;
    c.seq = 10 + static_cast<uint64_t>(i);
    c.cpu_start_ns = 1'000'000'123 + 1000 * static_cast<uint64_t>(i);
    c.cpu_end_ns = c.cpu_start_ns + 77;
    c.gpu_start_ns = c.cpu_start_ns + 5000;
    c.gpu_end_ns = c.gpu_start_ns + 1'000'001;
    c.gpu_channel_spread_ns = 33 + static_cast<uint32_t>(i);
    records.push_back(s);
  }
  ChunkEncoder encoder(StringTable::global());
  for (const RecordSlot& s : records) encoder.add(s);
  EXPECT_EQ(encoder.rows(), 4u);
  EXPECT_EQ(encoder.rows(RecordKind::kColl), 4u);
  wire::Bytes payload;
  encoder.finish(1, false, payload);
  EXPECT_EQ(encoder.rows(), 0u) << "finish starts a new chunk";

  trace::v1::Chunk chunk;
  ASSERT_TRUE(chunk.ParseFromArray(payload.data(), static_cast<int>(payload.size())));
  EXPECT_EQ(chunk.index(), 1u);
  const std::vector<std::string> want_strings = {"", "AllReduce", "ncclFloat32", "RING", "SIMPLE", "Broadcast"};
  const std::set<std::string> got_strings(chunk.strings().begin(), chunk.strings().end());
  EXPECT_EQ(got_strings, std::set<std::string>(want_strings.begin(), want_strings.end()));
  EXPECT_FALSE(chunk.has_p2p());
  EXPECT_FALSE(chunk.has_clock_sample());
  ASSERT_TRUE(chunk.has_coll());
  const trace::v1::CollTable& coll = chunk.coll();
  ASSERT_EQ(coll.shape_size(), 4);
  EXPECT_EQ(coll.shape(0), coll.shape(1));
  EXPECT_EQ(coll.shape(1), coll.shape(2));
  EXPECT_NE(coll.shape(2), coll.shape(3));
  ASSERT_EQ(coll.comm_id_size(), 2);  // two shapes
  EXPECT_EQ(coll.comm_id(0), 0xC0FFEEu);
  EXPECT_EQ(coll.thread(1), 4321u);
  EXPECT_EQ(chunk.strings(static_cast<int>(coll.func(coll.shape(0)))), "AllReduce");
  EXPECT_EQ(chunk.strings(static_cast<int>(coll.func(coll.shape(3)))), "Broadcast");
  EXPECT_EQ(coll.root(coll.shape(0)), -1);
  EXPECT_EQ(coll.root(coll.shape(3)), 2);
  EXPECT_EQ(coll.bytes(0), 4u << 20);
  EXPECT_EQ(coll.n_channels(0), 8u);
  // The first row's cpu_start_ns delta is the value itself (unless the whole column is
  // scaled by a power of two, which these odd times rule out).
  ASSERT_GE(coll.cpu_start_ns_size(), 1);
  EXPECT_EQ(static_cast<uint64_t>(coll.cpu_start_ns(0)), records[0].payload.coll.cpu_start_ns);
  const Table& t = *schema::tableFor(RecordKind::kColl);
  for (const Column& c : t.columns) {
    if (std::string_view(c.name) == "cpu_end_ns") {
      EXPECT_EQ(documentedColumn(coll, c, 4, true)[0], 77u);  // ref(cpu_start_ns)
    }
    if (std::string_view(c.name) == "gpu_channel_spread_ns") {
      EXPECT_EQ(documentedColumn(coll, c, 4, true), (std::vector<uint64_t>{33, 34, 35, 36}));
    }
  }
}

}  // namespace
}  // namespace commtrace
