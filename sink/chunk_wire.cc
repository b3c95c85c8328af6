#include "sink/chunk_wire.h"

#include <cstdint>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include "sink/commtrace.pb.h"
#include "sink/schema.h"

namespace commtrace {
namespace {

namespace pb = google::protobuf;
using pb::internal::WireFormatLite;

// How a field's varints become the values libprotobuf would hand over.
enum class Form : uint8_t { kUnsigned64, kUnsigned32, kZigzag64, kZigzag32, kSigned32 };

constexpr uint64_t valueOf(Form form, uint64_t wire) {
  switch (form) {
    case Form::kUnsigned64: return wire;
    case Form::kUnsigned32: return static_cast<uint32_t>(wire);
    case Form::kZigzag64: return static_cast<uint64_t>(WireFormatLite::ZigZagDecode64(wire));
    case Form::kZigzag32: return static_cast<uint64_t>(int64_t{WireFormatLite::ZigZagDecode32(static_cast<uint32_t>(wire))});
    case Form::kSigned32: return static_cast<uint64_t>(int64_t{static_cast<int32_t>(wire)});
  }
  return wire;
}

// What a field number of a table message is to the reader.
struct FieldSlot {
  enum Role : uint8_t { kUnknown, kColumn, kShape, kSparse, kScale } role = kUnknown;
  Form form = Form::kUnsigned64;
  uint8_t column = 0;  // kColumn: index in the schema table
};

struct TableLayout {
  std::vector<FieldSlot> fields;  // by field number
  const FieldSlot& at(uint32_t number) const {
    static const FieldSlot kUnknown;
    return number < fields.size() ? fields[number] : kUnknown;
  }
};

Form formOf(const pb::FieldDescriptor& f) {
  switch (f.type()) {
    case pb::FieldDescriptor::TYPE_SINT64: return Form::kZigzag64;
    case pb::FieldDescriptor::TYPE_SINT32: return Form::kZigzag32;
    case pb::FieldDescriptor::TYPE_UINT32: return Form::kUnsigned32;
    case pb::FieldDescriptor::TYPE_INT32: return Form::kSigned32;
    default: return Form::kUnsigned64;
  }
}

// Integer kinds whose repeated fields the reader takes as columns (as reflection did).
bool isIntegerColumn(const pb::FieldDescriptor& f) {
  const auto t = f.cpp_type();
  return f.is_repeated() && (t == pb::FieldDescriptor::CPPTYPE_UINT32 || t == pb::FieldDescriptor::CPPTYPE_UINT64 ||
                             t == pb::FieldDescriptor::CPPTYPE_INT64 || t == pb::FieldDescriptor::CPPTYPE_INT32);
}

TableLayout layoutOf(const schema::Table& t) {
  TableLayout layout;
  const pb::FieldDescriptor* field = trace::v1::Chunk::descriptor()->FindFieldByNumber(static_cast<int>(t.chunk_field));
  if (field == nullptr || field->message_type() == nullptr) return layout;
  const pb::Descriptor& message = *field->message_type();
  auto slot = [&](uint32_t number) -> FieldSlot& {
    if (number >= layout.fields.size()) layout.fields.resize(number + 1);
    return layout.fields[number];
  };
  for (size_t i = 0; i < t.columns.size(); ++i) {
    const pb::FieldDescriptor* f = message.FindFieldByNumber(static_cast<int>(t.columns[i].number));
    if (f != nullptr && isIntegerColumn(*f)) slot(t.columns[i].number) = {FieldSlot::kColumn, formOf(*f), static_cast<uint8_t>(i)};
  }
  if (const pb::FieldDescriptor* f = message.FindFieldByNumber(static_cast<int>(schema::kShapeField)); f != nullptr && t.has_shape() && isIntegerColumn(*f))
    slot(schema::kShapeField) = {FieldSlot::kShape, formOf(*f), 0};
  if (message.FindFieldByNumber(static_cast<int>(schema::kSparseField)) != nullptr) slot(schema::kSparseField).role = FieldSlot::kSparse;
  if (message.FindFieldByNumber(static_cast<int>(schema::kScaleField)) != nullptr) slot(schema::kScaleField).role = FieldSlot::kScale;
  return layout;
}

// Per table of schema::allTables(), and which table each Chunk field number holds.
struct ChunkLayout {
  std::vector<TableLayout> tables;
  std::vector<int> table_of_field;  // -1: not a table
  ChunkLayout() {
    for (const schema::Table& t : schema::allTables()) {
      tables.push_back(layoutOf(t));
      if (t.chunk_field >= table_of_field.size()) table_of_field.resize(t.chunk_field + 1, -1);
      table_of_field[t.chunk_field] = static_cast<int>(tables.size() - 1);
    }
  }
};

const ChunkLayout& chunkLayout() {
  static const ChunkLayout layout;
  return layout;
}

using Input = pb::io::CodedInputStream;

// Reads a length prefix and limits the input to it; false when the length runs past the
// end of the message around it (PushLimit would keep the outer limit instead).
bool enter(Input& in, uint32_t& length, Input::Limit& limit) {
  if (!in.ReadVarint32(&length) || static_cast<int64_t>(length) > in.BytesUntilLimit()) return false;
  limit = in.PushLimit(static_cast<int>(length));
  return true;
}

// One varint of [p, end) as libprotobuf reads it (at most 10 bytes, bits past 64 dropped);
// null when it runs past the end or past 10 bytes.
const uint8_t* decodeVarint(const uint8_t* p, const uint8_t* end, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 70 && p < end; shift += 7) {
    const uint8_t b = *p++;
    v |= uint64_t{b & 0x7Fu} << shift;
    if (b < 0x80) return p;
  }
  return nullptr;
}

// Appends a packed run of `length` bytes of varints, each as form F, decoded straight from
// the buffer: CodedInputStream's call per value was a third of parsing a live digest.
template <Form F>
bool readPacked(Input& in, std::vector<uint64_t>& out) {
  uint32_t length = 0;
  if (!in.ReadVarint32(&length) || static_cast<int64_t>(length) > in.BytesUntilLimit()) return false;
  if (length == 0) return true;
  const void* data = nullptr;
  int size = 0;
  if (!in.GetDirectBufferPointer(&data, &size) || size < static_cast<int>(length)) return false;
  const uint8_t* p = static_cast<const uint8_t*>(data);
  const uint8_t* const end = p + length;
  for (uint64_t v = 0; p < end; out.push_back(valueOf(F, v)))
    if (out.size() >= kMaxChunkRows || (p = decodeVarint(p, end, v)) == nullptr) return false;
  return in.Skip(static_cast<int>(length));
}

// Appends a repeated integer field's values: packed (length-delimited) or one varint.
bool readValues(Input& in, WireFormatLite::WireType wire_type, Form form, std::vector<uint64_t>& out) {
  uint64_t v = 0;
  if (wire_type == WireFormatLite::WIRETYPE_VARINT) {
    if (!in.ReadVarint64(&v)) return false;
    out.push_back(valueOf(form, v));
    return true;
  }
  switch (form) {
    case Form::kUnsigned64: return readPacked<Form::kUnsigned64>(in, out);
    case Form::kUnsigned32: return readPacked<Form::kUnsigned32>(in, out);
    case Form::kZigzag64: return readPacked<Form::kZigzag64>(in, out);
    case Form::kZigzag32: return readPacked<Form::kZigzag32>(in, out);
    case Form::kSigned32: return readPacked<Form::kSigned32>(in, out);
  }
  return false;
}

bool isIntegerWire(WireFormatLite::WireType w) {
  return w == WireFormatLite::WIRETYPE_VARINT || w == WireFormatLite::WIRETYPE_LENGTH_DELIMITED;
}

// Reads an embedded message's fields with each(number, wire_type) until its end; each
// returns false on damage, and skips what it does not take.
template <class Each>
bool readMessage(Input& in, Each&& each) {
  uint32_t length = 0;
  Input::Limit limit;
  if (!enter(in, length, limit)) return false;
  for (uint32_t tag; (tag = in.ReadTag()) != 0;) {
    const uint32_t number = WireFormatLite::GetTagFieldNumber(tag);
    if (number == 0 || !each(number, WireFormatLite::GetTagWireType(tag), tag)) return false;
  }
  const bool whole = in.ConsumedEntireMessage();
  in.PopLimit(limit);
  return whole;
}

bool readSparse(Input& in, WireTable::Sparse& sparse) {
  return readMessage(in, [&](uint32_t number, WireFormatLite::WireType w, uint32_t tag) {
    if (number == schema::kSparseColumnField && w == WireFormatLite::WIRETYPE_VARINT) return in.ReadVarint32(&sparse.field);
    if (number == schema::kSparseRowsField && isIntegerWire(w)) return readValues(in, w, Form::kUnsigned64, sparse.rows);
    if (number == schema::kSparseValuesField && isIntegerWire(w)) return readValues(in, w, Form::kUnsigned64, sparse.values);
    return WireFormatLite::SkipField(&in, tag);
  });
}

bool readScale(Input& in, std::pair<uint32_t, uint32_t>& scale) {
  return readMessage(in, [&](uint32_t number, WireFormatLite::WireType w, uint32_t tag) {
    if (number == schema::kScaleColumnField && w == WireFormatLite::WIRETYPE_VARINT) return in.ReadVarint32(&scale.first);
    if (number == schema::kScaleShiftField && w == WireFormatLite::WIRETYPE_VARINT) return in.ReadVarint32(&scale.second);
    return WireFormatLite::SkipField(&in, tag);
  });
}

// Emptied for the next chunk's entry, its buffers kept: assigning {} freed them, two
// allocations per sparse column of every chunk.
WireTable::Sparse& reuse(WireTable::Sparse& sparse) {
  sparse.field = 0;
  sparse.rows.clear();
  sparse.values.clear();
  return sparse;
}

bool readTable(Input& in, const TableLayout& layout, WireTable& table) {
  table.present = true;
  return readMessage(in, [&](uint32_t number, WireFormatLite::WireType w, uint32_t tag) {
    const FieldSlot& slot = layout.at(number);
    switch (slot.role) {
      case FieldSlot::kColumn:
        if (isIntegerWire(w)) return readValues(in, w, slot.form, table.columns[slot.column]);
        break;
      case FieldSlot::kShape:
        if (isIntegerWire(w)) return readValues(in, w, slot.form, table.row_shape);
        break;
      case FieldSlot::kSparse:
        if (w != WireFormatLite::WIRETYPE_LENGTH_DELIMITED) break;
        if (table.sparse_count == table.sparse.size()) table.sparse.emplace_back();
        return readSparse(in, reuse(table.sparse[table.sparse_count++]));
      case FieldSlot::kScale:
        if (w != WireFormatLite::WIRETYPE_LENGTH_DELIMITED) break;
        return readScale(in, table.scales.emplace_back());
      case FieldSlot::kUnknown: break;
    }
    return WireFormatLite::SkipField(&in, tag);
  });
}

void clear(WireChunk& out, size_t tables) {
  out.index = out.strings_before = out.strings_since = 0;
  out.closing = false;
  out.strings.clear();
  out.tables.resize(tables);
  for (size_t i = 0; i < tables; ++i) {
    WireTable& t = out.tables[i];
    t.present = false;
    t.columns.resize(schema::allTables()[i].columns.size());
    for (std::vector<uint64_t>& c : t.columns) c.clear();
    t.row_shape.clear();
    t.sparse_count = 0;
    t.scales.clear();
  }
}

bool readString(Input& in, const uint8_t* base, std::vector<std::string_view>& out) {
  uint32_t length = 0;
  if (!in.ReadVarint32(&length)) return false;
  const int at = in.CurrentPosition();
  if (!in.Skip(static_cast<int>(length))) return false;
  out.emplace_back(reinterpret_cast<const char*>(base) + at, length);
  return true;
}

// One field of the Chunk message; what it does not know it skips.
bool readChunkField(Input& in, uint32_t tag, const uint8_t* base, const ChunkLayout& layout, WireChunk& out) {
  const uint32_t number = WireFormatLite::GetTagFieldNumber(tag);
  const WireFormatLite::WireType w = WireFormatLite::GetTagWireType(tag);
  using Chunk = trace::v1::Chunk;
  if (w == WireFormatLite::WIRETYPE_VARINT) {
    uint64_t v = 0;
    switch (number) {
      case Chunk::kIndexFieldNumber: return in.ReadVarint64(&out.index);
      case Chunk::kStringsBeforeFieldNumber: return in.ReadVarint64(&out.strings_before);
      case Chunk::kStringsSinceFieldNumber: return in.ReadVarint64(&out.strings_since);
      case Chunk::kClosingFieldNumber:
        if (!in.ReadVarint64(&v)) return false;
        out.closing = v != 0;
        return true;
      default: break;
    }
  } else if (w == WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
    if (number == Chunk::kStringsFieldNumber) return readString(in, base, out.strings);
    if (number < layout.table_of_field.size() && layout.table_of_field[number] >= 0) {
      const auto table = static_cast<size_t>(layout.table_of_field[number]);
      return readTable(in, layout.tables[table], out.tables[table]);
    }
  }
  return WireFormatLite::SkipField(&in, tag);
}

}  // namespace

bool parseChunk(std::span<const uint8_t> bytes, WireChunk& out) {
  const ChunkLayout& layout = chunkLayout();
  clear(out, layout.tables.size());
  Input in(bytes.data(), static_cast<int>(bytes.size()));
  for (uint32_t tag; (tag = in.ReadTag()) != 0;) {
    const uint32_t number = WireFormatLite::GetTagFieldNumber(tag);
    if (number == 0 || !readChunkField(in, tag, bytes.data(), layout, out)) return false;
  }
  return in.ConsumedEntireMessage() && in.CurrentPosition() == static_cast<int>(bytes.size());
}

}  // namespace commtrace
