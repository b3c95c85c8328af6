#include "tools/dump.h"

#include <nlohmann/json.hpp>

#include "sink/reader.h"
#include "sink/schema.h"
#include "tools/trace_tally.h"

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
  TraceTally tally;
  DecodedChunk chunk;
  size_t issues_printed = 0;
  // Damage goes to stderr as it is found, between the records around it.
  const auto printNewIssues = [&] {
    for (; issues_printed < reader.issues().size(); ++issues_printed) err << reader.issues()[issues_printed].message << '\n';
  };
  while (reader.next(chunk)) {
    printNewIssues();  // damage met before this chunk
    tally.add(chunk);
    for (const RecordSlot& slot : chunk.records) printRecord(reader, slot, format, out);
  }
  printNewIssues();
  err << "commtrace: " << path << ": " << tally.summary();
  if (!reader.issues().empty()) err << "; " << reader.issues().size() << " damaged region(s)";
  err << '\n';
  return 0;
}

}  // namespace commtrace::tools
