#include "tools/dump.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "sink/reader.h"
#include "tools/cli_command.h"
#include "sink/schema.h"
#include "tools/report/format.h"
#include "tools/trace_tally.h"

namespace commtrace::tools {
namespace {

using schema::Codec;

namespace fs = std::filesystem;

// A trace's strings are the traced program's bytes (a communicator's name as NCCL was given
// it): what is not UTF-8 is written as U+FFFD, never an abort.
template <class Json>
std::string jsonText(const Json& j) {
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// One column's value for display, appended as JSON text: strings resolved and escaped,
// identifiers in hex (as the report writes them; quoted in JSON, bare in text), signed
// fields signed. Numbers are written directly: a JSON value built and dumped per field was
// 8 us a row, and a file of millions of tiny rows took minutes.
void appendValue(std::string& line, const TraceReader& reader, const RecordSlot& slot, const schema::Column& c, DumpFormat format) {
  const uint64_t v = schema::load(slot, c);
  if (c.codec == Codec::kString) {
    line += jsonText(nlohmann::json(std::string(reader.str(static_cast<StringId>(v)))));
    return;
  }
  const bool quoted = format == DumpFormat::kJson;
  if (schema::isIdentifier(c)) {
    line += quoted ? "\"" + report::fmt::hexId(v) + "\"" : report::fmt::hexId(v);
    return;
  }
  char number[24];
  const auto end = c.sign_extend ? std::to_chars(number, number + sizeof number, static_cast<int64_t>(v)).ptr
                                 : std::to_chars(number, number + sizeof number, v).ptr;
  line.append(number, end);
}

void printRecord(const TraceReader& reader, const RecordSlot& slot, DumpFormat format, std::string& line, std::ostream& out) {
  const schema::Table* table = schema::tableFor(slot.kind);
  if (table == nullptr) return;
  const bool json = format == DumpFormat::kJson;
  line.assign(json ? "{\"kind\":\"" : "");
  line += table->name;
  if (json) line += '"';
  for (const schema::Column& c : table->columns) {
    line += json ? ",\"" : " ";
    line += c.name;
    line += json ? "\":" : "=";
    appendValue(line, reader, slot, c, format);
  }
  line += json ? "}\n" : "\n";
  out.write(line.data(), static_cast<std::streamsize>(line.size()));
}

void printHeader(const std::string& path, const TraceReader& reader, DumpFormat format, std::ostream& out) {
  const auto& h = reader.header();
  if (format == DumpFormat::kJson) {
    const nlohmann::ordered_json line{{"kind", "FileHeader"},     {"file", path},
                                      {"host", h.host()},         {"pid", h.pid()},
                                      {"rank", h.rank()},         {"world_size", h.world_size()},
                                      {"job_id", h.job_id()},     {"format", h.format_version()},
                                      {"tracer_version", h.tracer_version()}};
    out << jsonText(line) << '\n';
    return;
  }
  out << "# " << path << ": host " << h.host() << ", pid " << h.pid() << ", rank " << h.rank() << ", job "
      << (h.job_id().empty() ? "(none)" : h.job_id()) << ", format " << h.format_version()
      << ", written by commtrace " << h.tracer_version() << '\n';
}

// The files a path names: itself, or every *.ctrace below a directory, in path order.
std::vector<std::string> traceFilesOf(const std::string& path, std::ostream& err) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {
    if (!fs::exists(path, ec)) {
      err << "commtrace: " << path << ": no such file or directory\n";
      return {};
    }
    return {path};
  }
  std::vector<std::string> files;
  for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->is_regular_file(ec) && it->path().extension() == ".ctrace") files.push_back(it->path().string());
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) err << "commtrace: " << path << ": no trace files (*.ctrace) in this directory\n";
  return files;
}

int dumpFile(const std::string& path, DumpFormat format, std::ostream& out, std::ostream& err) {
  TraceReader reader;
  std::string error;
  if (!reader.open(path, error)) {
    err << error << '\n';
    return 1;
  }
  printHeader(path, reader, format, out);
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
    std::string line;
    for (const RecordSlot& slot : chunk.records) printRecord(reader, slot, format, line, out);
  }
  printNewIssues();
  err << "commtrace: " << path << ": " << tally.summary();
  if (!reader.issues().empty()) err << "; " << reader.issues().size() << " damaged region(s)";
  if (reader.state() == TraceReader::State::kOpen) {
    err << "; not closed by its writer: still being written, or its process was killed or crashed";
    if (reader.tornTail()) err << " (the last " << reader.size() - reader.tornTailOffset() << " bytes are a chunk not yet complete)";
  }
  err << '\n';
  return 0;
}

}  // namespace

int dump(const std::vector<std::string>& paths, DumpFormat format, std::ostream& out, std::ostream& err) {
  int status = 0;
  for (const std::string& path : paths) {
    const std::vector<std::string> files = traceFilesOf(path, err);
    if (files.empty()) status = 1;
    for (const std::string& file : files) status = std::max(status, dumpFile(file, format, out, err));
  }
  return status;
}

Command addDumpCommand(CLI::App& app) {
  struct Flags {
    std::vector<std::string> paths;
    std::string format = "text";
  };
  const auto f = std::make_shared<Flags>();
  CLI::App* dump_cmd = app.add_subcommand("dump", "Print every record of trace files (.ctrace), each after its header");
  dump_cmd->footer("Exit status: 0 when every file was read (damage is reported on stderr), 1 when a path names nothing or a "
                   "file is not a trace, 2 for usage errors.");
  dump_cmd->add_option("paths", f->paths, "trace files written by libcommtrace.so, or directories to read every *.ctrace below")
      ->required();
  dump_cmd->add_option("--format", f->format, "text (one line per record) or json (JSON lines)")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  return {dump_cmd, [f] { return dump(f->paths, f->format == "json" ? DumpFormat::kJson : DumpFormat::kText, std::cout, std::cerr); }};
}

}  // namespace commtrace::tools
