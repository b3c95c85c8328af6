#include "sink/chunk_encoder.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "core/string_table.h"

namespace commtrace {

using schema::Codec;
using schema::Column;

namespace {

constexpr size_t kMaxColumns = 32;  // schema.cc asserts every table fits

using schema::mix;

}  // namespace

// Everything one kind accumulates during a chunk. Rows are matched to shapes through an
// open-addressing table; each shape knows the prediction groups of its grouped columns
// (groups are made of shape columns), so a row costs one hash, not one per column.
struct ChunkEncoder::KindState {
  explicit KindState(const schema::Table& t)
      : table(t), columns(t.columns.size()), prev_row(t.columns.size()), group_of_column(t.columns.size(), 0) {
    for (size_t i = 0; i < t.columns.size(); ++i) {
      if (t.columns[i].in_shape) shape_columns.push_back(static_cast<uint8_t>(i));
      if (t.columns[i].codec == Codec::kDelta && t.columns[i].group != 0) {
        group_of_column[i] = static_cast<uint8_t>(grouped_columns.size());
        grouped_columns.push_back(static_cast<uint8_t>(i));
      }
    }
  }

  // Finds or adds the shape made of the shape columns of `values`.
  uint32_t internShape(const uint64_t* values) {
    uint64_t hash = 0;
    for (uint8_t c : shape_columns) hash = mix(hash, values[c]);
    if (2 * (shape_hashes.size() + 1) > slots.size()) growSlots();
    const size_t mask = slots.size() - 1;
    size_t pos = hash & mask;
    for (; slots[pos] != 0; pos = (pos + 1) & mask) {
      const uint32_t shape = slots[pos] - 1;
      if (shape_hashes[shape] == hash && sameShape(shape, values)) return shape;
    }
    const auto shape = static_cast<uint32_t>(shape_hashes.size());
    slots[pos] = shape + 1;
    shape_hashes.push_back(hash);
    for (uint8_t c : shape_columns) shape_values.push_back(values[c]);
    for (uint8_t c : grouped_columns) {
      auto [it, inserted] = group_ids.try_emplace(schema::groupOf(c, table.columns[c].group, values),
                                                  static_cast<uint32_t>(group_last.size()));
      if (inserted) group_last.push_back(0);
      shape_groups.push_back(it->second);
    }
    return shape;
  }

  bool sameShape(uint32_t shape, const uint64_t* values) const {
    const uint64_t* stored = &shape_values[shape * shape_columns.size()];
    for (size_t k = 0; k < shape_columns.size(); ++k) {
      if (stored[k] != values[shape_columns[k]]) return false;
    }
    return true;
  }

  void growSlots() {
    slots.assign(std::max<size_t>(64, 2 * slots.size()), 0);
    const size_t mask = slots.size() - 1;
    for (uint32_t shape = 0; shape < shape_hashes.size(); ++shape) {
      size_t pos = shape_hashes[shape] & mask;
      while (slots[pos] != 0) pos = (pos + 1) & mask;
      slots[pos] = shape + 1;
    }
  }

  // The last value of column i's group for a row of this shape.
  uint64_t& groupLast(uint32_t shape, size_t i) {
    return group_last[shape_groups[shape * grouped_columns.size() + group_of_column[i]]];
  }

  size_t shapeCount() const { return shape_hashes.size(); }

  void clear() {
    rows = 0;
    for (auto& c : columns) c.clear();
    row_shapes.clear();
    std::fill(slots.begin(), slots.end(), 0);
    shape_hashes.clear();
    shape_values.clear();
    shape_groups.clear();
    group_ids.clear();
    group_last.clear();
    std::fill(prev_row.begin(), prev_row.end(), 0);
  }

  const schema::Table& table;
  std::vector<uint8_t> shape_columns;    // indices of the shape columns
  std::vector<uint8_t> grouped_columns;  // indices of the columns predicted within a group
  uint32_t rows = 0;
  std::vector<std::vector<uint64_t>> columns;  // row columns' values before scaling and zigzag
  wire::Bytes row_shapes;                      // the `shape` column
  std::vector<uint32_t> slots;                 // open addressing: shape + 1, 0 = empty
  std::vector<uint64_t> shape_hashes;          // per shape
  std::vector<uint64_t> shape_values;          // per shape, its shape columns' values
  std::vector<uint32_t> shape_groups;          // per shape, per grouped column: group id
  std::unordered_map<uint64_t, uint32_t> group_ids;  // groupOf(...) -> group id (new shapes only)
  std::vector<uint64_t> group_last;            // per group id: the last x
  std::vector<uint64_t> prev_row;
  std::vector<uint8_t> group_of_column;        // column -> index in grouped_columns
};

ChunkEncoder::ChunkEncoder(const StringTable& strings)
    : strings_(strings), local_of_global_(StringTable::kOverflowId + 1, 0) {
  for (const schema::Table& t : schema::allTables()) {
    kinds_[static_cast<int>(t.kind)] = std::make_unique<KindState>(t);
  }
  reset();
}

ChunkEncoder::~ChunkEncoder() = default;

uint32_t ChunkEncoder::rows(RecordKind kind) const {
  const auto& state = kinds_[static_cast<int>(kind)];
  return state ? state->rows : 0;
}

uint64_t ChunkEncoder::localString(uint64_t global_id) {
  if (global_id >= local_of_global_.size()) global_id = StringTable::kOverflowId;
  uint32_t& local = local_of_global_[global_id];
  if (local == 0) {
    globals_in_table_.push_back(static_cast<uint32_t>(global_id));
    local = static_cast<uint32_t>(globals_in_table_.size());
  }
  return local - 1;
}

void ChunkEncoder::add(const RecordSlot& slot) {
  const int kind_index = static_cast<int>(slot.kind);
  if (kind_index <= 0 || kind_index >= kRecordKindCount) return;
  KindState& state = *kinds_[kind_index];
  const auto& columns = state.table.columns;

  uint64_t values[kMaxColumns];
  for (size_t i = 0; i < columns.size(); ++i) {
    values[i] = schema::load(slot, columns[i]);
    if (columns[i].codec == Codec::kString) values[i] = localString(values[i]);
  }
  const bool shaped = !state.shape_columns.empty();
  const uint32_t shape = shaped ? state.internShape(values) : 0;
  if (shaped) wire::putVarint(state.row_shapes, shape);

  for (size_t i = 0; i < columns.size(); ++i) {
    const Column& c = columns[i];
    if (c.in_shape) continue;
    uint64_t v = values[i];
    switch (c.codec) {
      case Codec::kDelta: {
        uint64_t x = v - (c.ref_column >= 0 ? values[c.ref_column] : 0);
        if (c.row_delta) {
          const uint64_t change = x - state.prev_row[i];
          state.prev_row[i] = x;
          x = change;
        }
        if (c.group != 0) {
          uint64_t& last = state.groupLast(shape, i);
          const uint64_t miss = x - last - c.step;
          last = x;
          x = miss;
        }
        v = x;
        break;
      }
      case Codec::kSigned:
      case Codec::kPlain:
      case Codec::kString: break;
    }
    state.columns[i].push_back(v);
  }
  ++state.rows;
  ++rows_;
}

namespace {

// Turns a row column's values into their wire form: divided by the largest power of two
// that divides them all (GPU timers tick in 1.024 us on some GPUs, so their deltas carry
// ten zero bits), then zigzagged for sint64 columns. Returns the shift.
uint32_t toWireValues(std::vector<uint64_t>& values, bool zigzag) {
  uint64_t bits = 0;
  for (uint64_t v : values) bits |= v;
  const uint32_t shift = bits == 0 ? 0 : static_cast<uint32_t>(__builtin_ctzll(bits));
  for (uint64_t& v : values) {
    v = zigzag ? wire::zigzag(static_cast<uint64_t>(static_cast<int64_t>(v) >> shift)) : v >> shift;
  }
  return shift;
}

// Writes one row column. In tables with shapes (whose `shape` column gives the row count) a
// mostly-zero column, such as a counter predicted right on all rows but the first of each
// group, goes into the table's `sparse` list instead, or is left out when all zero.
void putRowColumn(wire::Bytes& out, uint32_t number, const std::vector<uint64_t>& values, bool may_be_sparse,
                  wire::Bytes& scratch, wire::Bytes& sparse) {
  size_t dense_bytes = 0, sparse_bytes = 0, nonzero = 0;
  for (size_t r = 0, last = 0; r < values.size(); ++r) {
    dense_bytes += wire::varintSize(values[r]);
    if (values[r] == 0) continue;
    sparse_bytes += wire::varintSize(r - last) + wire::varintSize(values[r]);
    last = r;
    ++nonzero;
  }
  scratch.clear();
  if (!may_be_sparse || sparse_bytes + 8 >= dense_bytes) {
    for (uint64_t v : values) wire::putVarint(scratch, v);
    wire::putBytesField(out, number, scratch.data(), scratch.size());
    return;
  }
  if (nonzero == 0) return;
  sparse.clear();
  wire::putVarintField(sparse, schema::kSparseColumnField, number);
  for (size_t r = 0, last = 0; r < values.size(); ++r) {
    if (values[r] == 0) continue;
    wire::putVarint(scratch, r - last);
    last = r;
  }
  wire::putBytesField(sparse, schema::kSparseRowsField, scratch.data(), scratch.size());
  scratch.clear();
  for (uint64_t v : values) {
    if (v != 0) wire::putVarint(scratch, v);
  }
  wire::putBytesField(sparse, schema::kSparseValuesField, scratch.data(), scratch.size());
  wire::putBytesField(out, schema::kSparseField, sparse.data(), sparse.size());
}

}  // namespace

void ChunkEncoder::finish(uint64_t chunk_index, bool closing, wire::Bytes& out) {
  out.clear();
  wire::putVarintField(out, 1, chunk_index);
  if (closing) wire::putVarintField(out, 5, 1);
  for (size_t i = strings_before_chunk_; i < globals_in_table_.size(); ++i) {
    wire::putStringField(out, 2, strings_.lookup(globals_in_table_[i]));
  }
  if (strings_before_chunk_ == 0) table_since_ = chunk_index;
  if (strings_before_chunk_ > 0) {
    wire::putVarintField(out, 3, strings_before_chunk_);
    wire::putVarintField(out, 4, table_since_);
  }

  wire::Bytes table_bytes;
  wire::Bytes shape_column, scratch, sparse;
  for (const schema::Table& t : schema::allTables()) {
    KindState& state = *kinds_[static_cast<int>(t.kind)];
    if (state.rows == 0) continue;
    table_bytes.clear();
    const size_t shape_width = state.shape_columns.size();
    if (shape_width > 0) wire::putBytesField(table_bytes, schema::kShapeField, state.row_shapes.data(), state.row_shapes.size());
    size_t shape_slot = 0;
    for (size_t i = 0; i < t.columns.size(); ++i) {
      const Column& c = t.columns[i];
      if (!c.in_shape) {
        const bool zigzag = c.codec == Codec::kDelta || c.codec == Codec::kSigned;
        const uint32_t shift = toWireValues(state.columns[i], zigzag);
        if (shift > 0) {
          sparse.clear();
          wire::putVarintField(sparse, schema::kScaleColumnField, c.number);
          wire::putVarintField(sparse, schema::kScaleShiftField, shift);
          wire::putBytesField(table_bytes, schema::kScaleField, sparse.data(), sparse.size());
        }
        putRowColumn(table_bytes, c.number, state.columns[i], shape_width > 0, scratch, sparse);
        continue;
      }
      // A shape column of zeros (no user tag, not graph-captured, ...) is left out too.
      shape_column.clear();
      bool any = false;
      for (size_t s = 0; s < state.shapeCount(); ++s) {
        const uint64_t v = state.shape_values[s * shape_width + shape_slot];
        wire::putVarint(shape_column, c.codec == Codec::kSigned ? wire::zigzag(v) : v);
        any |= v != 0;
      }
      if (any) wire::putBytesField(table_bytes, c.number, shape_column.data(), shape_column.size());
      ++shape_slot;
    }
    wire::putBytesField(out, t.chunk_field, table_bytes.data(), table_bytes.size());
  }
  reset();
}

void ChunkEncoder::restartStringTable() {
  for (uint32_t global : globals_in_table_) local_of_global_[global] = 0;
  globals_in_table_.clear();
  localString(0);  // a fresh table's strings[0] is always ""
  strings_before_chunk_ = 0;
  chunks_in_table_ = 0;
}

void ChunkEncoder::reset() {
  if (globals_in_table_.empty() || ++chunks_in_table_ >= kChunksPerStringTable) {
    restartStringTable();
  } else {
    strings_before_chunk_ = globals_in_table_.size();
  }
  for (auto& k : kinds_) {
    if (k) k->clear();
  }
  rows_ = 0;
}

}  // namespace commtrace
