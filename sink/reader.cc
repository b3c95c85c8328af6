#include "sink/reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <span>
#include <unordered_map>
#include <utility>

#include "sink/frame.h"
#include "sink/schema.h"
#include "sink/wire.h"

namespace commtrace {

using schema::Codec;
using schema::Column;

struct TraceReader::StringIndex {
  struct Hash : std::hash<std::string_view> {
    using is_transparent = void;
  };
  std::unordered_map<std::string, StringId, Hash, std::equal_to<>> ids;
};

struct TraceReader::Frame {
  frame::Header header;
  std::vector<uint8_t>& bytes;       // the frame as read: header, payload, perhaps more
  std::span<const uint8_t> payload;  // in bytes
  bool cut_short = false;  // not readable because the file ends inside it: a write not finished, or a truncation
};

namespace {

// The index of the row column with proto field `number`; t.columns.size() if none.
size_t rowColumnIndex(const schema::Table& t, uint32_t number) {
  size_t index = 0;
  while (index < t.columns.size() && (t.columns[index].number != number || t.columns[index].in_shape)) ++index;
  return index;
}

// Expands the table's SparseColumn entries into full columns. false if one is malformed.
bool applySparse(const WireTable& table, const schema::Table& t, size_t rows, std::vector<std::vector<uint64_t>>& columns,
                 std::string& why) {
  for (size_t e = 0; e < table.sparse_count; ++e) {
    const WireTable::Sparse& sparse = table.sparse[e];
    const size_t index = rowColumnIndex(t, sparse.field);
    if (index == t.columns.size() || !columns[index].empty() || sparse.rows.size() != sparse.values.size()) {
      why = std::string(t.name) + " has a malformed sparse column " + std::to_string(sparse.field);
      return false;
    }
    const bool zigzag = t.columns[index].codec == Codec::kDelta || t.columns[index].codec == Codec::kSigned;
    columns[index].assign(rows, 0);
    uint64_t row = 0;
    for (size_t k = 0; k < sparse.rows.size(); ++k) {
      row += sparse.rows[k];
      if (row >= rows) {
        why = std::string(t.name) + " sparse column " + std::to_string(sparse.field) + " points past the last row";
        return false;
      }
      columns[index][row] = zigzag ? wire::unzigzag(sparse.values[k]) : sparse.values[k];
    }
  }
  return true;
}

// Multiplies back the columns listed in the table's ColumnScale entries.
bool applyScale(const WireTable& table, const schema::Table& t, std::vector<std::vector<uint64_t>>& columns,
                std::string& why) {
  for (const auto& [field, shift] : table.scales) {
    const size_t index = rowColumnIndex(t, field);
    if (index == t.columns.size() || shift > 63) {
      why = std::string(t.name) + " has a malformed scale for column " + std::to_string(field);
      return false;
    }
    for (uint64_t& v : columns[index]) v <<= shift;
  }
  return true;
}

// One table of one chunk, its columns expanded (in the chunk's WireTable): a row column
// holds a value per row, a shape column one per shape. A table without shape columns has
// one implicit shape that every row uses.
struct TableColumns {
  const std::vector<std::vector<uint64_t>>& values;  // per column
  const std::vector<uint64_t>& row_shape;            // per row; empty without shape columns
  size_t rows = 0;
  size_t shapes = 1;
};

// Undoes sparse storage and scaling in the table's columns, and says how many rows and
// shapes it has. false if the columns disagree in length or point outside the table.
bool expandColumns(WireTable& table, const schema::Table& t, size_t& rows_out, size_t& shapes_out, std::string& why) {
  const size_t n_columns = t.columns.size();
  auto& columns = table.columns;
  const bool shaped = t.has_shape();
  const size_t rows = shaped ? table.row_shape.size() : columns[0].size();
  if (shaped && !applySparse(table, t, rows, columns, why)) return false;
  if (!applyScale(table, t, columns, why)) return false;
  // As many shapes as rows refer to; shape columns left out are all zeros. The writer makes
  // a shape only for a row, so more shapes than rows is damage (and would cost memory).
  size_t shapes = shaped ? 0 : 1;
  for (uint64_t s : table.row_shape) shapes = std::max<size_t>(shapes, s + 1);
  if (shaped && shapes > rows) {
    why = std::string(t.name) + " has " + std::to_string(shapes) + " shapes for " + std::to_string(rows) + " rows";
    return false;
  }
  for (size_t i = 0; i < n_columns; ++i) {
    const size_t n = columns[i].size();
    if (t.columns[i].in_shape) {
      if (n == 0) columns[i].assign(shapes, 0);
      if (n != 0 && n != shapes) { why = std::string(t.name) + " shape columns differ in length"; return false; }
    } else if (n == 0 && shaped) {
      columns[i].assign(rows, 0);  // the writer leaves out all-zero row columns
    } else if (n != rows) {
      why = std::string(t.name) + "." + t.columns[i].name + " has " + std::to_string(n) + " values for " +
            std::to_string(rows) + " rows";
      return false;
    }
  }
  rows_out = rows;
  shapes_out = shapes;
  return true;
}

// A chunk string index as a file string id; false if the chunk has no such string.
bool fileStringOf(uint64_t local, std::span<const StringId> file_ids, uint64_t& id) {
  if (local >= file_ids.size()) return false;
  id = file_ids[local];
  return true;
}

// What the rows of one shape share, worked out once per shape instead of once per row: a
// record with the shape columns filled in, and the prediction group of each grouped column.
struct ShapeTable {
  std::vector<RecordSlot> records;   // per shape
  std::vector<uint8_t> grouped;      // the columns predicted within a group
  std::vector<uint32_t> group_of;    // per shape, per grouped column: its group number
  size_t groups = 0;
  std::vector<std::pair<uint64_t, uint32_t>> keys;  // buildShapes' scratch
  std::vector<uint64_t> group_last;                  // decodeRows' scratch: per group, its last value

  const uint32_t* groupsOf(size_t shape) const { return group_of.data() + shape * grouped.size(); }
};

// Numbers the groups: equal groupOf() keys make one group, as in the encoder, whose map
// from keys to groups also merges two colliding keys. `keys` pairs a key with its place in
// group_of.
void numberGroups(std::vector<std::pair<uint64_t, uint32_t>>& keys, ShapeTable& out) {
  std::sort(keys.begin(), keys.end());
  out.group_of.resize(keys.size());
  uint32_t group = 0;
  for (size_t k = 0; k < keys.size(); ++k) {
    if (k > 0 && keys[k].first != keys[k - 1].first) ++group;
    out.group_of[keys[k].second] = group;
  }
  out.groups = keys.empty() ? 0 : group + 1;
}

// Fills `out` for every shape of the table; false if a shape refers to a missing string.
bool buildShapes(const schema::Table& t, const TableColumns& columns, std::span<const StringId> file_ids,
                 ShapeTable& out, std::string& why) {
  out.grouped.clear();
  for (size_t i = 0; i < t.columns.size(); ++i) {
    if (t.columns[i].codec == Codec::kDelta && t.columns[i].group != 0) out.grouped.push_back(static_cast<uint8_t>(i));
  }
  RecordSlot blank{};
  blank.kind = t.kind;
  out.records.assign(columns.shapes, blank);
  std::vector<std::pair<uint64_t, uint32_t>>& keys = out.keys;
  keys.clear();
  uint64_t values[schema::kMaxColumns] = {};  // the shape's values as encoded (strings as chunk indices), which groups are keyed on
  for (size_t s = 0; s < columns.shapes; ++s) {
    for (size_t i = 0; i < t.columns.size() && t.columns[i].in_shape; ++i) {  // shape columns come first
      uint64_t v = values[i] = columns.values[i][s];
      if (t.columns[i].codec == Codec::kString && !fileStringOf(v, file_ids, v)) {
        why = std::string(t.name) + " refers to a missing string";
        return false;
      }
      schema::store(out.records[s], t.columns[i], v);
    }
    for (size_t g = 0; g < out.grouped.size(); ++g) {
      const Column& c = t.columns[out.grouped[g]];
      keys.emplace_back(schema::groupOf(out.grouped[g], c.group, values),
                        static_cast<uint32_t>(s * out.grouped.size() + g));
    }
  }
  numberGroups(keys, out);
  return true;
}

// A row column with what decoding it needs at hand.
struct RowColumn {
  const Column* column;
  const uint64_t* stored;  // per row, as read
  uint8_t index;           // in the table
  int8_t group = -1;       // index among the grouped columns, -1 if not grouped
};

// A table's row columns, in table order (a ref names an earlier one), on the stack: a live
// collector decodes a thousand small chunks a second.
struct RowColumns {
  std::array<RowColumn, schema::kMaxColumns> at;
  size_t size = 0;
  std::span<const RowColumn> all() const { return {at.data(), size}; }
};

RowColumns rowColumnsOf(const schema::Table& t, const TableColumns& columns, const ShapeTable& shapes) {
  RowColumns out;
  for (size_t i = 0; i < t.columns.size(); ++i) {
    if (t.columns[i].in_shape) continue;
    RowColumn rc{&t.columns[i], columns.values[i].data(), static_cast<uint8_t>(i)};
    const auto g = std::find(shapes.grouped.begin(), shapes.grouped.end(), i);
    if (g != shapes.grouped.end()) rc.group = static_cast<int8_t>(g - shapes.grouped.begin());
    out.at[out.size++] = rc;
  }
  return out;
}

// The encoder's stages undone in reverse order (see schema::Column). `group_last` (null for
// a column without a group) and `prev_row` are the state of the column's group and of the
// column; `values` the row's values decoded so far.
inline uint64_t unpredict(const Column& c, uint64_t x, uint64_t* group_last, uint64_t& prev_row,
                          const uint64_t* values) {
  if (group_last != nullptr) {
    x += *group_last + c.step;
    *group_last = x;
  }
  if (c.row_delta) x = prev_row += x;
  return c.ref_column >= 0 ? x + values[c.ref_column] : x;
}

// Appends a record per row: its shape's record with the row columns decoded into it.
bool decodeRows(const schema::Table& t, const TableColumns& columns, ShapeTable& shapes,
                std::span<const StringId> file_ids, std::vector<RecordSlot>& out, std::string& why) {
  const RowColumns row_columns = rowColumnsOf(t, columns, shapes);
  std::vector<uint64_t>& group_last = shapes.group_last;
  group_last.assign(shapes.groups, 0);
  uint64_t prev_row[schema::kMaxColumns] = {};
  uint64_t values[schema::kMaxColumns];
  for (size_t r = 0; r < columns.rows; ++r) {
    const size_t shape = columns.row_shape.empty() ? 0 : columns.row_shape[r];
    const uint32_t* groups = shapes.groupsOf(shape);
    RecordSlot& slot = out.emplace_back(shapes.records[shape]);
    for (const RowColumn& rc : row_columns.all()) {
      const Column& c = *rc.column;
      uint64_t v = rc.stored[r];
      if (c.codec == Codec::kDelta) {
        uint64_t* last = rc.group >= 0 ? &group_last[groups[rc.group]] : nullptr;
        v = unpredict(c, v, last, prev_row[rc.index], values);
      }
      values[rc.index] = v;
      if (c.codec == Codec::kString && !fileStringOf(v, file_ids, v)) {
        why = std::string(t.name) + " refers to a missing string";
        return false;
      }
      schema::store(slot, c, v);
    }
  }
  return true;
}

}  // namespace

TraceReader::TraceReader() : string_index_(std::make_unique<StringIndex>()) { fileString(""); }

TraceReader::~TraceReader() = default;

void TraceReader::report(uint64_t offset, const std::string& what) {
  issues_.push_back({offset, "commtrace: " + path_ + ": offset " + std::to_string(offset) + ": " + what});
}

StringId TraceReader::fileString(std::string_view s) {
  const auto found = string_index_->ids.find(s);
  if (found != string_index_->ids.end()) return found->second;
  const auto id = static_cast<StringId>(strings_.size());
  strings_.emplace_back(s);
  string_index_->ids.emplace(std::string(s), id);
  return id;
}

std::string_view TraceReader::str(StringId id) const {
  return id < strings_.size() ? std::string_view(strings_[id]) : std::string_view();
}

bool TraceReader::open(const std::string& path, std::string& error, DescriptorPool* descriptors) {
  auto file = std::make_shared<FileBytes>();
  if (!file->open(path, descriptors)) {
    path_ = path;
    error = errno == EINVAL ? "commtrace: " + path + " is not a regular file" : "commtrace: cannot read " + path + ": " + strerror(errno);
    return false;
  }
  return open(path, std::move(file), error);
}

bool TraceReader::open(const std::string& name, std::shared_ptr<ByteSource> source, std::string& error) {
  // A refused stream stays refused: next() finds nothing to read in it.
  auto refuse = [&](std::string message) {
    error = std::move(message);
    size_ = 0;
    offset_ = 0;
    return false;
  };
  path_ = name;
  source_ = std::move(source);
  if (!source_->size(size_)) return refuse("commtrace: cannot read " + name + ": " + strerror(errno));
  resync_budget_ = kResyncSlack + kResyncBytesPerByte * size_;
  // The library creates its file and writes the header in the next call: a process killed
  // between the two leaves an empty file (and every other writer of *.ctrace files, some bytes).
  if (size_ == 0) return refuse("commtrace: " + name + " is empty: its writer died before writing the file header");
  std::vector<uint8_t> header_payload;
  Frame first{{}, header_payload};
  std::string why;
  const bool header_ok = readFrameAt(0, first, why) && first.header.type == frame::Type::kFileHeader &&
                         header_.ParseFromArray(first.payload.data(), static_cast<int>(first.payload.size()));
  if (!header_ok) {
    // Damage in the header frame must not cost the chunks behind it; but a file with no
    // intact frame at all is not ours.
    const uint64_t next = findNextFrame(1);
    if (next == size_) {
      return refuse("commtrace: " + name + " is not a commtrace trace (" +
                    (why.empty() ? "no valid file header" : why) + ")");
    }
    header_.Clear();
    report(0, "file header damaged (" + (why.empty() ? std::string("does not parse") : why) +
                  "); host, pid and rank are unknown, reading the chunks after it");
    offset_ = next;
    return true;
  }
  if (header_.format_version() > schema::kFormatVersion) {
    return refuse("commtrace: " + name + " has format version " + std::to_string(header_.format_version()) +
                  "; this commtrace reads up to " + std::to_string(schema::kFormatVersion));
  }
  offset_ = frame::kHeaderBytes + first.payload.size();
  return true;
}

bool TraceReader::readFrameAt(uint64_t offset, Frame& f, std::string& why, uint64_t* budget) {
  const uint64_t left = size_ - offset;
  f.cut_short = left < frame::kHeaderBytes;
  // Read with its header, as many bytes as the last payload and a quarter more, unless
  // resynchronising: candidates there are mostly not frames, and a header each is enough.
  const uint64_t guess = budget != nullptr ? 0 : std::max<uint64_t>(last_payload_ + last_payload_ / 4, kPayloadReadAhead);
  const size_t first_read = static_cast<size_t>(std::min(left, frame::kHeaderBytes + guess));
  if (!f.cut_short) f.bytes.resize(first_read);
  if (f.cut_short || !source_->readAt(offset, f.bytes.data(), first_read)) {
    why = "incomplete frame header";
    return false;
  }
  const auto header = frame::parseHeader(f.bytes.data());
  if (!header) {
    why = "no valid frame header";
    return false;
  }
  if (header->length > left - frame::kHeaderBytes) {
    f.cut_short = true;
    why = "frame of " + std::to_string(header->length) + " bytes runs past the end of the file";
    return false;
  }
  if (budget != nullptr) {
    if (header->length > *budget) {
      resync_gave_up_ = true;
      why = "resynchronising gave up";
      return false;
    }
    *budget -= header->length;
  }
  f.header = *header;
  const size_t frame_bytes = frame::kHeaderBytes + header->length;
  if (frame_bytes > first_read) {
    f.bytes.resize(frame_bytes);
    if (!source_->readAt(offset + first_read, f.bytes.data() + first_read, frame_bytes - first_read)) {
      why = "read error";
      return false;
    }
  }
  f.payload = std::span<const uint8_t>(f.bytes.data() + frame::kHeaderBytes, header->length);
  if (!frame::crcMatches(f.bytes.data(), *header, f.payload)) {
    why = "CRC mismatch";
    return false;
  }
  if (budget == nullptr) last_payload_ = header->length;
  return true;
}

// Every candidate's payload is read and checked: frame headers planted every few bytes, each
// claiming the rest of the file, made that quadratic (1 MiB of them: 15.5 s; 4 MiB: past
// 120 s). The bytes checked over all resyncs are bounded by a multiple of the file's size;
// past it, the rest of the file is given up as damage too dense to read.
uint64_t TraceReader::findNextFrame(uint64_t from) {
  std::vector<uint8_t> window(1 << 16), candidate_payload;
  for (uint64_t base = from; base + 4 <= size_;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(window.size(), size_ - base));
    if (!source_->readAt(base, window.data(), n)) break;
    for (size_t i = 0; i + 4 <= n; ++i) {
      if (std::memcmp(window.data() + i, frame::kMagic, 4) != 0) continue;
      Frame candidate{{}, candidate_payload};
      std::string why;
      if (readFrameAt(base + i, candidate, why, &resync_budget_)) return base + i;
      if (resync_gave_up_) return size_;
    }
    base += n - 3;  // a magic may straddle two windows
  }
  return size_;
}

TraceReader::State TraceReader::state() const {
  if (!header_.marks_closing()) return State::kUnknown;
  return last_chunk_closing_ ? State::kClosed : State::kOpen;
}

bool TraceReader::refresh() {
  uint64_t size = 0;
  if (source_ == nullptr || !source_->size(size)) return false;
  if (size <= size_) return true;
  resync_budget_ += kResyncBytesPerByte * (size - size_);
  size_ = size;
  if (torn_tail_) {
    torn_tail_ = false;
    offset_ = torn_tail_offset_;
  }
  return true;
}

bool TraceReader::next(DecodedChunk& chunk) {
  Frame f{{}, chunk.frame_bytes};
  while (offset_ < size_) {
    std::string why;
    if (!readFrameAt(offset_, f, why)) {
      const uint64_t resume = findNextFrame(offset_ + 1);
      if (resync_gave_up_) {
        report(offset_, why + "; the " + std::to_string(size_ - offset_) +
                            " bytes from here are not read: frame headers too dense to find an intact frame among (damage, or a crafted file)");
        offset_ = size_;
        return false;
      }
      if (resume == size_) {
        torn_tail_ = true;
        torn_tail_offset_ = offset_;
        // An open file's last frame cut short is the chunk being written: no damage.
        if (state() != State::kOpen || !f.cut_short)
          report(offset_, why + "; the last " + std::to_string(size_ - offset_) +
                              " bytes are a torn tail (writer stopped mid-chunk) or damage");
      } else {
        report(offset_, why + "; skipped " + std::to_string(resume - offset_) + " bytes to the next intact frame");
      }
      offset_ = resume;
      continue;
    }
    const uint64_t at = offset_;
    offset_ += frame::kHeaderBytes + f.payload.size();
    if (f.header.type == frame::Type::kFileHeader) {
      // Files joined with cat: what follows is another process's, never more of this one's.
      report(at, "another file's header (files joined with cat?): the " + std::to_string(size_ - at) +
                     " bytes from here are another process's and are not read; cut the file here to read them");
      offset_ = size_;
      return false;
    }
    if (f.header.type != frame::Type::kChunk) {
      report(at, "unexpected frame type; skipped");
      continue;
    }
    WireChunk& wire = chunk.wire;
    if (!parseChunk(f.payload, wire)) {
      report(at, "chunk does not parse; skipped");
      continue;
    }
    source_->release(offset_);
    chunk.offset = at;
    chunk.index = wire.index;
    last_chunk_closing_ = wire.closing;
    chunk.records.clear();
    if (!decodeChunk(wire, chunk, why)) {
      report(at, "chunk is inconsistent (" + why + "); skipped");
      continue;
    }
    return true;
  }
  return false;
}

bool TraceReader::decodeChunk(WireChunk& chunk, DecodedChunk& out, std::string& why) {
  // The string table continues from the previous chunk unless it starts afresh here; a
  // chunk that fails to decode leaves it as it was.
  // A lost chunk that added no strings costs only itself.
  const uint64_t before = chunk.strings_before;
  if (before != 0 && (!have_table_ || chunk.strings_since != table_since_ || string_table_.size() != before)) {
    why = "its names are in an earlier chunk that is missing";
    return false;
  }
  std::vector<StringId>& previous_table = previous_string_table_;
  previous_table.clear();
  if (before == 0) previous_table.swap(string_table_);  // string_table_ takes the scratch's buffer
  for (size_t i = 0; i < chunk.strings.size(); ++i) {
    // A fresh table mostly repeats the one before (a live digest carries its own every
    // second): comparing with it is cheaper than looking each string up.
    const std::string_view s = chunk.strings[i];
    const bool repeated = i < previous_table.size() && str(previous_table[i]) == s;
    string_table_.push_back(repeated ? previous_table[i] : fileString(s));
  }
  if (!decodeTables(chunk, out, why)) {
    if (before == 0) string_table_.swap(previous_table);
    else string_table_.resize(before);
    return false;
  }
  if (before == 0) {
    have_table_ = true;
    table_since_ = chunk.index;
  }
  return true;
}

bool TraceReader::decodeTables(WireChunk& chunk, DecodedChunk& out, std::string& why) {
  const std::vector<StringId>& file_id_of_local = string_table_;
  const std::span<const schema::Table> tables = schema::allTables();
  for (size_t i = 0; i < tables.size(); ++i) {
    const schema::Table& t = tables[i];
    WireTable& wire = chunk.tables[i];
    if (!wire.present) continue;
    TableColumns columns{wire.columns, wire.row_shape};
    // Reused by the thread's every table: a live collector decodes a thousand small chunks a
    // second, and a fresh one was five allocations per table of each.
    thread_local ShapeTable shapes;
    if (!expandColumns(wire, t, columns.rows, columns.shapes, why)) return false;
    if (out.records.size() + columns.rows > kMaxChunkRows) {
      why = "more than " + std::to_string(kMaxChunkRows) + " records in one chunk, far more than a writer puts in one";
      return false;
    }
    if (!buildShapes(t, columns, file_id_of_local, shapes, why) ||
        !decodeRows(t, columns, shapes, file_id_of_local, out.records, why)) {
      return false;
    }
  }
  return true;
}

}  // namespace commtrace
