#include "sink/reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unordered_map>

#include <google/protobuf/reflection.h>

#include "sink/frame.h"
#include "sink/schema.h"
#include "sink/wire.h"

namespace commtrace {

namespace pb = google::protobuf;
using schema::Codec;
using schema::Column;

struct TraceReader::StringIndex {
  std::unordered_map<std::string, StringId> ids;
};

struct TraceReader::Frame {
  frame::Header header;
  std::vector<uint8_t> payload;
};

namespace {

bool preadFully(int fd, void* buf, size_t n, uint64_t offset) {
  auto* p = static_cast<uint8_t*>(buf);
  while (n > 0) {
    const ssize_t got = pread(fd, p, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    p += got;
    n -= static_cast<size_t>(got);
    offset += static_cast<uint64_t>(got);
  }
  return true;
}

// A repeated integer column of a table message, widened to uint64 (sint64 arrives already
// zigzag-decoded by libprotobuf).
std::vector<uint64_t> columnValues(const pb::Message& m, uint32_t number) {
  std::vector<uint64_t> out;
  const pb::FieldDescriptor* f = m.GetDescriptor()->FindFieldByNumber(static_cast<int>(number));
  if (f == nullptr || !f->is_repeated()) return out;
  const pb::Reflection* r = m.GetReflection();
  switch (f->cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_UINT32:
      for (uint32_t v : r->GetRepeatedFieldRef<uint32_t>(m, f)) out.push_back(v);
      break;
    case pb::FieldDescriptor::CPPTYPE_UINT64:
      for (uint64_t v : r->GetRepeatedFieldRef<uint64_t>(m, f)) out.push_back(v);
      break;
    case pb::FieldDescriptor::CPPTYPE_INT64:
      for (int64_t v : r->GetRepeatedFieldRef<int64_t>(m, f)) out.push_back(static_cast<uint64_t>(v));
      break;
    default:
      break;
  }
  return out;
}

// The index of the row column with proto field `number`; t.columns.size() if none.
size_t rowColumnIndex(const schema::Table& t, uint32_t number) {
  size_t index = 0;
  while (index < t.columns.size() && (t.columns[index].number != number || t.columns[index].in_shape)) ++index;
  return index;
}

// Expands the table's SparseColumn entries into full columns. false if one is malformed.
bool applySparse(const pb::Message& table, const schema::Table& t, size_t rows,
                 std::vector<std::vector<uint64_t>>& columns, std::string& why) {
  const pb::FieldDescriptor* f = table.GetDescriptor()->FindFieldByNumber(static_cast<int>(schema::kSparseField));
  if (f == nullptr) return true;
  const pb::Reflection* r = table.GetReflection();
  for (int e = 0; e < r->FieldSize(table, f); ++e) {
    const auto& sparse = static_cast<const trace::v1::SparseColumn&>(r->GetRepeatedMessage(table, f, e));
    const size_t index = rowColumnIndex(t, sparse.field());
    if (index == t.columns.size() || !columns[index].empty() || sparse.rows_size() != sparse.values_size()) {
      why = std::string(t.name) + " has a malformed sparse column " + std::to_string(sparse.field());
      return false;
    }
    const bool zigzag = t.columns[index].codec == Codec::kDelta || t.columns[index].codec == Codec::kSigned;
    columns[index].assign(rows, 0);
    uint64_t row = 0;
    for (int k = 0; k < sparse.rows_size(); ++k) {
      row += sparse.rows(k);
      if (row >= rows) {
        why = std::string(t.name) + " sparse column " + std::to_string(sparse.field()) + " points past the last row";
        return false;
      }
      columns[index][row] = zigzag ? wire::unzigzag(sparse.values(k)) : sparse.values(k);
    }
  }
  return true;
}

// Multiplies back the columns listed in the table's ColumnScale entries.
bool applyScale(const pb::Message& table, const schema::Table& t, std::vector<std::vector<uint64_t>>& columns,
                std::string& why) {
  const pb::FieldDescriptor* f = table.GetDescriptor()->FindFieldByNumber(static_cast<int>(schema::kScaleField));
  if (f == nullptr) return true;
  const pb::Reflection* r = table.GetReflection();
  for (int e = 0; e < r->FieldSize(table, f); ++e) {
    const auto& scale = static_cast<const trace::v1::ColumnScale&>(r->GetRepeatedMessage(table, f, e));
    const size_t index = rowColumnIndex(t, scale.field());
    if (index == t.columns.size() || scale.shift() > 63) {
      why = std::string(t.name) + " has a malformed scale for column " + std::to_string(scale.field());
      return false;
    }
    for (uint64_t& v : columns[index]) v <<= scale.shift();
  }
  return true;
}

}  // namespace

TraceReader::TraceReader() : string_index_(std::make_unique<StringIndex>()) { fileString(""); }

TraceReader::~TraceReader() {
  if (fd_ >= 0) close(fd_);
}

void TraceReader::report(uint64_t offset, const std::string& what) {
  issues_.push_back({offset, "commtrace: " + path_ + ": offset " + std::to_string(offset) + ": " + what});
}

StringId TraceReader::fileString(const std::string& s) {
  auto [it, inserted] = string_index_->ids.try_emplace(s, static_cast<StringId>(strings_.size()));
  if (inserted) strings_.push_back(s);
  return it->second;
}

std::string_view TraceReader::str(StringId id) const {
  return id < strings_.size() ? std::string_view(strings_[id]) : std::string_view();
}

bool TraceReader::open(const std::string& path, std::string& error) {
  // A refused file stays refused: next() finds nothing to read in it.
  auto refuse = [&](std::string message) {
    error = std::move(message);
    size_ = 0;
    offset_ = 0;
    return false;
  };
  path_ = path;
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st{};
  if (fd_ < 0 || fstat(fd_, &st) != 0) {
    return refuse("commtrace: cannot read " + path + ": " + strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    return refuse("commtrace: " + path + " is not a regular file");
  }
  size_ = static_cast<uint64_t>(st.st_size);
  Frame first;
  std::string why;
  const bool header_ok = readFrameAt(0, first, why) && first.header.type == frame::Type::kFileHeader &&
                         header_.ParseFromArray(first.payload.data(), static_cast<int>(first.payload.size()));
  if (!header_ok) {
    // Damage in the header frame must not cost the chunks behind it; but a file with no
    // intact frame at all is not ours.
    const uint64_t next = findNextFrame(1);
    if (next == size_) {
      return refuse("commtrace: " + path + " is not a commtrace trace (" +
                    (why.empty() ? "no valid file header" : why) + ")");
    }
    header_.Clear();
    report(0, "file header damaged (" + (why.empty() ? std::string("does not parse") : why) +
                  "); host, pid and rank are unknown, reading the chunks after it");
    offset_ = next;
    return true;
  }
  if (header_.format_version() > schema::kFormatVersion) {
    return refuse("commtrace: " + path + " has format version " + std::to_string(header_.format_version()) +
                  "; this commtrace reads up to " + std::to_string(schema::kFormatVersion));
  }
  offset_ = frame::kHeaderBytes + first.payload.size();
  return true;
}

bool TraceReader::readFrameAt(uint64_t offset, Frame& f, std::string& why) {
  uint8_t header_bytes[frame::kHeaderBytes];
  if (size_ - offset < frame::kHeaderBytes || !preadFully(fd_, header_bytes, sizeof header_bytes, offset)) {
    why = "incomplete frame header";
    return false;
  }
  const auto header = frame::parseHeader(header_bytes);
  if (!header) {
    why = "no valid frame header";
    return false;
  }
  if (header->length > size_ - offset - frame::kHeaderBytes) {
    why = "frame of " + std::to_string(header->length) + " bytes runs past the end of the file";
    return false;
  }
  f.header = *header;
  f.payload.resize(header->length);
  if (!preadFully(fd_, f.payload.data(), f.payload.size(), offset + frame::kHeaderBytes)) {
    why = "read error";
    return false;
  }
  if (!frame::crcMatches(header_bytes, *header, f.payload)) {
    why = "CRC mismatch";
    return false;
  }
  return true;
}

uint64_t TraceReader::findNextFrame(uint64_t from) {
  std::vector<uint8_t> window(1 << 16);
  for (uint64_t base = from; base + 4 <= size_;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(window.size(), size_ - base));
    if (!preadFully(fd_, window.data(), n, base)) break;
    for (size_t i = 0; i + 4 <= n; ++i) {
      if (std::memcmp(window.data() + i, frame::kMagic, 4) != 0) continue;
      Frame candidate;
      std::string why;
      if (readFrameAt(base + i, candidate, why)) return base + i;
    }
    base += n - 3;  // a magic may straddle two windows
  }
  return size_;
}

bool TraceReader::next(DecodedChunk& chunk) {
  Frame f;
  while (offset_ < size_) {
    std::string why;
    if (!readFrameAt(offset_, f, why)) {
      const uint64_t resume = findNextFrame(offset_ + 1);
      if (resume == size_) {
        torn_tail_ = true;
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
    if (f.header.type != frame::Type::kChunk) {
      report(at, "unexpected frame type; skipped");
      continue;
    }
    trace::v1::Chunk message;
    if (!message.ParseFromArray(f.payload.data(), static_cast<int>(f.payload.size()))) {
      report(at, "chunk does not parse; skipped");
      continue;
    }
    chunk.offset = at;
    chunk.index = message.index();
    chunk.records.clear();
    if (!decodeChunk(message, chunk, why)) {
      report(at, "chunk is inconsistent (" + why + "); skipped");
      continue;
    }
    return true;
  }
  return false;
}

bool TraceReader::decodeChunk(const trace::v1::Chunk& chunk, DecodedChunk& out, std::string& why) {
  std::vector<StringId> file_id_of_local;
  file_id_of_local.reserve(chunk.strings_size());
  for (const std::string& s : chunk.strings()) file_id_of_local.push_back(fileString(s));

  const pb::Reflection* reflection = chunk.GetReflection();
  for (const schema::Table& t : schema::allTables()) {
    const pb::FieldDescriptor* field = chunk.GetDescriptor()->FindFieldByNumber(static_cast<int>(t.chunk_field));
    if (field == nullptr || !reflection->HasField(chunk, field)) continue;
    const pb::Message& table = reflection->GetMessage(chunk, field);

    const size_t n_columns = t.columns.size();
    std::vector<std::vector<uint64_t>> columns(n_columns);
    for (size_t i = 0; i < n_columns; ++i) columns[i] = columnValues(table, t.columns[i].number);
    const bool shaped = t.has_shape();
    const std::vector<uint64_t> row_shape = shaped ? columnValues(table, schema::kShapeField) : std::vector<uint64_t>();
    const size_t rows = shaped ? row_shape.size() : columns[0].size();
    if (shaped && !applySparse(table, t, rows, columns, why)) return false;
    if (!applyScale(table, t, columns, why)) return false;
    // As many shapes as rows refer to; shape columns left out are all zeros.
    size_t shapes = 0;
    for (uint64_t s : row_shape) shapes = std::max<size_t>(shapes, s + 1);
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

    std::vector<uint64_t> prev_row(n_columns, 0);
    std::unordered_map<uint64_t, uint64_t> group_prev;
    uint64_t values[32];
    for (size_t r = 0; r < rows; ++r) {
      for (size_t i = 0; i < n_columns; ++i) {
        const Column& c = t.columns[i];
        const uint64_t stored = c.in_shape ? columns[i][row_shape[r]] : columns[i][r];
        if (c.codec != Codec::kDelta) {
          values[i] = stored;
          continue;
        }
        // The encoder's stages undone in reverse order (see schema::Column).
        uint64_t x = stored;
        if (c.group != 0) {
          uint64_t& last = group_prev[schema::groupOf(i, c.group, values)];
          x += last + c.step;
          last = x;
        }
        if (c.row_delta) x = prev_row[i] += x;
        values[i] = x + (c.ref_column >= 0 ? values[c.ref_column] : 0);
      }
      RecordSlot slot{};
      slot.kind = t.kind;
      for (size_t i = 0; i < n_columns; ++i) {
        uint64_t v = values[i];
        if (t.columns[i].codec == Codec::kString) {
          if (v >= file_id_of_local.size()) { why = std::string(t.name) + " refers to a missing string"; return false; }
          v = file_id_of_local[v];
        }
        schema::store(slot, t.columns[i], v);
      }
      out.records.push_back(slot);
    }
  }
  return true;
}

}  // namespace commtrace
