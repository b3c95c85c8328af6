#include "tools/dump.h"

#include <algorithm>
#include <array>
#include <map>
#include <nlohmann/json.hpp>

#include "sink/reader.h"
#include "sink/schema.h"

namespace commtrace::tools {
namespace {

using schema::Codec;

// One column's value for display: strings resolved, signed fields signed.
nlohmann::json columnJson(const TraceReader& reader, const RecordSlot& slot, const schema::Column& c) {
  const uint64_t v = schema::load(slot, c);
  if (c.codec == Codec::kString) return std::string(reader.str(static_cast<StringId>(v)));
  if (c.sign_extend) return static_cast<int64_t>(v);
  return v;
}

void printRecord(const TraceReader& reader, const RecordSlot& slot, DumpFormat format, std::ostream& out) {
  const schema::Table* table = schema::tableFor(slot.kind);
  if (table == nullptr) return;
  if (format == DumpFormat::kJson) {
    nlohmann::ordered_json line;
    line["kind"] = table->name;
    for (const schema::Column& c : table->columns) line[c.name] = columnJson(reader, slot, c);
    out << line.dump() << '\n';
    return;
  }
  out << table->name;
  for (const schema::Column& c : table->columns) out << ' ' << c.name << '=' << columnJson(reader, slot, c).dump();
  out << '\n';
}

}  // namespace

int dump(const std::string& path, DumpFormat format, std::ostream& out, std::ostream& err) {
  TraceReader reader;
  std::string error;
  if (!reader.open(path, error)) {
    err << error << '\n';
    return 1;
  }
  const auto& h = reader.header();
  if (format == DumpFormat::kText) {
    out << "# " << path << ": host " << h.host() << ", pid " << h.pid() << ", rank " << h.rank()
        << ", format " << h.format_version() << ", written by commtrace " << h.tracer_version() << '\n';
  }
  std::array<uint64_t, kRecordKindCount> per_kind{};
  uint64_t chunks = 0;
  // Drop summaries are cumulative per (thread, kind): the latest one of each counts.
  std::map<std::pair<uint32_t, uint8_t>, std::pair<uint64_t, uint64_t>> drops;
  uint64_t untracked = 0;  // process-wide, cumulative: the largest report is the total
  DecodedChunk chunk;
  size_t issues_printed = 0;
  // Damage goes to stderr as it is found, between the records around it.
  const auto printNewIssues = [&] {
    for (; issues_printed < reader.issues().size(); ++issues_printed) err << reader.issues()[issues_printed].message << '\n';
  };
  while (reader.next(chunk)) {
    printNewIssues();  // damage met before this chunk
    ++chunks;
    for (const RecordSlot& slot : chunk.records) {
      ++per_kind[static_cast<int>(slot.kind)];
      if (slot.kind == RecordKind::kDropSummary) {
        const DropSummaryRecord& d = slot.payload.drop_summary;
        auto& latest = drops[{d.thread, d.dropped_kind}];
        latest = {std::max(latest.first, d.ring_full), std::max(latest.second, d.sink_failed)};
        untracked = std::max(untracked, d.untracked);
      }
      printRecord(reader, slot, format, out);
    }
  }
  printNewIssues();
  uint64_t ring_full = 0, sink_failed = 0;
  for (const auto& [key, counts] : drops) {
    ring_full += counts.first;
    sink_failed += counts.second;
  }

  uint64_t total = 0;
  err << "commtrace: " << path << ": " << chunks << " chunks";
  for (const schema::Table& t : schema::allTables()) {
    const uint64_t n = per_kind[static_cast<int>(t.kind)];
    total += n;
    if (n > 0) err << ", " << t.name << ' ' << n;
  }
  err << " (" << total << " records); dropped before the file: " << ring_full << " (ring full), "
      << sink_failed << " (write failed)";
  if (untracked > 0) err << "; NCCL events not followed: " << untracked << " (plugin op pool full)";
  if (!reader.issues().empty()) err << "; " << reader.issues().size() << " damaged region(s)";
  err << '\n';
  return 0;
}

}  // namespace commtrace::tools
