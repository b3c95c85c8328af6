// `commtrace dump` as a user runs it: one line per record in text, JSON lines that hold
// exactly the values written, exit 1 with a "commtrace:" message for a file that is not a
// trace, exit 0 with the damage reported on stderr for a damaged one.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "tests/support/commtrace_cli.h"
#include "tests/support/run_program.h"
#include "tests/support/sink_test_support.h"

namespace commtrace {
namespace {

using testing::BuiltTrace;
using testing::TempDir;

struct CliResult {
  int exit_code = -1;
  std::vector<std::string> out, err;  // lines
};

// Runs bin/commtrace with args, stdout and stderr split into lines.
CliResult runCli(const TempDir& dir, std::vector<std::string> args) {
  const testutil::ProgramResult r = testutil::commtrace(dir, std::move(args));
  return CliResult{r.exit_code, testutil::linesOf(r.out), testutil::linesOf(r.err)};
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& l : v) s += l + "\n";
  return s;
}

// Two chunks of realistic records, then every kind with extreme values.
BuiltTrace sampleTrace(std::vector<RecordSlot>* colls_out = nullptr) {
  StringTable& strings = StringTable::global();
  std::vector<RecordSlot> first;
  const char* funcs[] = {"AllReduce", "AllGather", "ReduceScatter"};
  for (int i = 0; i < 6; ++i) {
    RecordSlot s{};
    s.kind = RecordKind::kColl;
    s.thread = 1234;
    CollRecord& c = s.payload.coll;
    c.comm_id = 0xFEED;
    c.seq = static_cast<uint64_t>(i);
    c.func = strings.intern(funcs[i % 3]);
    c.datatype = strings.intern("ncclBfloat16");
    c.algo = strings.intern("RING");
    c.proto = strings.intern("SIMPLE");
    c.root = -1;
    c.bytes = 1u << (10 + i);
    c.cpu_start_ns = 1'000'000 + 10'000 * static_cast<uint64_t>(i);
    c.cpu_end_ns = c.cpu_start_ns + 500;
    first.push_back(s);
    if (colls_out != nullptr) colls_out->push_back(s);
  }
  RecordSlot comm{};
  comm.kind = RecordKind::kCommInfo;
  comm.thread = 1234;
  comm.payload.comm_info = {0xFEED, 999, strings.intern("world \"dp\""), 1, 8, 3, 3, -1};
  first.push_back(comm);

  testing::SlotGenerator gen(31);
  std::vector<RecordSlot> second;
  for (const schema::Table& t : schema::allTables()) {
    for (uint64_t v : testing::extremeValues(8)) {
      RecordSlot s = gen.make(t.kind, 55);
      for (const schema::Column& c : t.columns) {
        if (c.codec != schema::Codec::kString) schema::store(s, c, v);
      }
      second.push_back(s);
    }
  }
  return testing::buildTrace({first, second});
}

size_t recordCount(const BuiltTrace& t) {
  size_t n = 0;
  for (const auto& c : t.expected) n += c.size();
  return n;
}

TEST(DumpCli, TextHasOneLinePerRecord) {
  TempDir dir;
  std::vector<RecordSlot> colls;
  const BuiltTrace built = sampleTrace(&colls);
  const std::string path = testing::pathIn(dir, "sample.ctrace");
  testing::writeFile(path, built.bytes);
  const CliResult r = runCli(dir, {"dump", path});
  ASSERT_EQ(r.exit_code, 0) << joined(r.err);
  ASSERT_FALSE(r.out.empty());
  EXPECT_EQ(r.out[0].rfind("# " + path + ": host testhost, pid 4242, rank 5", 0), 0u) << r.out[0];
  std::vector<std::string> records(r.out.begin() + 1, r.out.end());
  ASSERT_EQ(records.size(), recordCount(built));
  // The first chunk, in reader order: the collectives, then the comm info.
  for (size_t i = 0; i < colls.size(); ++i) {
    SCOPED_TRACE(records[i]);
    const CollRecord& c = colls[i].payload.coll;
    EXPECT_EQ(records[i].rfind("coll thread=1234 comm_id=0x000000000000feed ", 0), 0u) << "ids in hex, as the report";
    EXPECT_NE(records[i].find(std::string(" func=\"") + std::string(StringTable::global().lookup(c.func)) + "\""), std::string::npos);
    EXPECT_NE(records[i].find(" datatype=\"ncclBfloat16\" algo=\"RING\" proto=\"SIMPLE\" root=-1 "), std::string::npos);
    EXPECT_NE(records[i].find(" seq=" + std::to_string(c.seq) + " "), std::string::npos);
    EXPECT_NE(records[i].find(" cpu_start_ns=" + std::to_string(c.cpu_start_ns) + " "), std::string::npos);
    EXPECT_NE(records[i].find(" bytes=" + std::to_string(c.bytes) + " "), std::string::npos);
  }
  EXPECT_EQ(records[colls.size()].rfind("comm_info ", 0), 0u) << records[colls.size()];
  EXPECT_NE(records[colls.size()].find(R"(comm_name="world \"dp\"")"), std::string::npos) << records[colls.size()];
  EXPECT_NE(records[colls.size()].find(" cuda_device=-1"), std::string::npos) << records[colls.size()];
  // The summary on stderr counts them.
  ASSERT_EQ(r.err.size(), 1u) << joined(r.err);
  EXPECT_EQ(r.err[0].rfind("commtrace: " + path + ": 2 chunks, coll ", 0), 0u) << r.err[0];
  EXPECT_NE(r.err[0].find("(" + std::to_string(recordCount(built)) + " records)"), std::string::npos) << r.err[0];
}

// Drop summaries are cumulative: the summary takes the latest per (thread, kind), adds them
// up, and names events the plugin could not follow only when there were some.
TEST(DumpCli, SummaryCountsWhatNeverReachedTheFile) {
  auto drop = [](uint32_t thread, RecordKind kind, uint64_t ring_full, uint64_t sink_failed, uint64_t untracked) {
    RecordSlot s{};
    s.kind = RecordKind::kDropSummary;
    s.payload.drop_summary = DropSummaryRecord{.ring_full = ring_full,
                                               .sink_failed = sink_failed,
                                               .cpu_ns = 1,
                                               .thread = thread,
                                               .dropped_kind = static_cast<uint8_t>(kind),
                                               .untracked = untracked};
    return s;
  };
  TempDir dir;
  const std::string path = testing::pathIn(dir, "drops.ctrace");
  testing::writeFile(path, testing::buildTrace({{drop(7, RecordKind::kColl, 3, 0, 0), drop(0, RecordKind::kColl, 0, 2, 4)},
                                                {drop(7, RecordKind::kColl, 5, 0, 0), drop(8, RecordKind::kP2p, 1, 0, 0),
                                                 drop(0, RecordKind::kColl, 0, 2, 9)}})
                               .bytes);
  CliResult r = runCli(dir, {"dump", path});
  ASSERT_EQ(r.exit_code, 0) << joined(r.err);
  ASSERT_EQ(r.err.size(), 1u) << joined(r.err);
  EXPECT_NE(r.err[0].find("dropped before the file: 6 (ring full), 2 (write failed); "
                          "NCCL events not followed: 9 (plugin op pool full)"),
            std::string::npos)
      << r.err[0];

  testing::writeFile(path, testing::buildTrace({{drop(7, RecordKind::kColl, 3, 0, 0)}}).bytes);
  r = runCli(dir, {"dump", path});
  ASSERT_EQ(r.err.size(), 1u) << joined(r.err);
  EXPECT_NE(r.err[0].find("dropped before the file: 3 (ring full), 0 (write failed)"), std::string::npos) << r.err[0];
  EXPECT_EQ(r.err[0].find("not followed"), std::string::npos) << r.err[0];
}

TEST(DumpCli, JsonLinesHoldTheValuesWritten) {
  TempDir dir;
  const BuiltTrace built = sampleTrace();
  const std::string path = testing::pathIn(dir, "sample.ctrace");
  testing::writeFile(path, built.bytes);
  const CliResult r = runCli(dir, {"dump", path, "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << joined(r.err);
  std::vector<RecordSlot> want;
  for (const auto& c : built.expected) want.insert(want.end(), c.begin(), c.end());
  ASSERT_EQ(r.out.size(), 1 + want.size()) << "the file's header, then one JSON line per record, nothing else";
  const nlohmann::json header = nlohmann::json::parse(r.out[0]);
  EXPECT_EQ(header.at("kind"), "FileHeader");
  EXPECT_EQ(header.at("file"), path);
  EXPECT_EQ(header.at("rank"), 5);
  EXPECT_TRUE(header.contains("job_id"));
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(r.out[i + 1]);
    nlohmann::json j;
    ASSERT_NO_THROW(j = nlohmann::json::parse(r.out[i + 1]));
    const schema::Table* t = schema::tableFor(want[i].kind);
    EXPECT_EQ(j.at("kind"), t->name);
    EXPECT_EQ(j.size(), t->columns.size() + 1) << "kind plus one key per column";
    for (const schema::Column& c : t->columns) {
      SCOPED_TRACE(c.name);
      ASSERT_TRUE(j.contains(c.name));
      const uint64_t v = schema::load(want[i], c);
      const nlohmann::json& got = j[c.name];
      if (c.codec == schema::Codec::kString) {
        EXPECT_EQ(got.get<std::string>(), StringTable::global().lookup(static_cast<StringId>(v)));
      } else if (schema::isIdentifier(c)) {  // a JSON number would lose the low bits of a 64-bit id
        char hex[24];
        std::snprintf(hex, sizeof hex, "0x%016llx", static_cast<unsigned long long>(v));
        EXPECT_EQ(got.get<std::string>(), hex);
      } else if (c.sign_extend) {
        ASSERT_TRUE(got.is_number_integer());
        EXPECT_EQ(got.get<int64_t>(), static_cast<int64_t>(v));
      } else {
        ASSERT_TRUE(got.is_number_unsigned() || (got.is_number_integer() && got.get<int64_t>() >= 0));
        EXPECT_EQ(got.get<uint64_t>(), v);
      }
    }
  }
}

// NCCL hands the profiler whatever name the program gave the communicator, and the library
// writes it as it came: a name that is not UTF-8 is dumped with U+FFFD in its place, in
// both formats, never an abort (nlohmann's type_error 316).
TEST(DumpCli, ANameThatIsNotUtf8IsDumpedWithReplacementCharacters) {
  TempDir dir;
  RecordSlot comm{};
  comm.kind = RecordKind::kCommInfo;
  comm.thread = 1234;
  comm.payload.comm_info = {0xFEED, 999, StringTable::global().intern("tp\xff\xfe"), 1, 8, 3, 3, -1};
  const std::string path = testing::pathIn(dir, "latin1.ctrace");
  testing::writeFile(path, testing::buildTrace({{comm}}).bytes);
  for (const std::string format : {"json", "text"}) {
    SCOPED_TRACE(format);
    const CliResult r = runCli(dir, {"dump", path, "--format", format});
    ASSERT_EQ(r.exit_code, 0) << joined(r.err);
    ASSERT_EQ(r.out.size(), 2u) << joined(r.out);
    const std::string replaced = "tp\xef\xbf\xbd\xef\xbf\xbd";
    if (format == "json") EXPECT_EQ(nlohmann::json::parse(r.out[1]).at("comm_name"), replaced);
    else EXPECT_NE(r.out[1].find("\"" + replaced + "\""), std::string::npos) << r.out[1];
  }
}

TEST(DumpCli, FileThatIsNotATraceExitsOne) {
  TempDir dir;
  const std::string path = testing::pathIn(dir, "notes.txt");
  const std::string text = "not a trace\n";
  testing::writeFile(path, text.data(), text.size());
  for (const char* format : {"text", "json"}) {
    const CliResult r = runCli(dir, {"dump", path, "--format", format});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_TRUE(r.out.empty()) << joined(r.out);
    ASSERT_EQ(r.err.size(), 1u) << joined(r.err);
    EXPECT_EQ(r.err[0].rfind("commtrace: " + path, 0), 0u) << r.err[0];
  }
}

// Usage errors (caught by the argument parser) speak like every other message and exit 2;
// --help still prints usage and exits 0.
TEST(DumpCli, UsageErrorsStartWithCommtraceAndExitTwo) {
  TempDir dir;
  const std::vector<std::vector<std::string>> bad = {
      {"dump"},
      {"dump", testing::pathIn(dir, "missing.ctrace"), "--format", "xml"},
      {"frobnicate"},
      {},
  };
  for (const auto& args : bad) {
    const CliResult r = runCli(dir, args);
    EXPECT_EQ(r.exit_code, 2) << joined(r.err);
    ASSERT_FALSE(r.err.empty());
    EXPECT_EQ(r.err[0].rfind("commtrace: ", 0), 0u) << r.err[0];
  }
  const CliResult typo = runCli(dir, {"reprot", "run"});
  EXPECT_EQ(typo.exit_code, 2);
  ASSERT_FALSE(typo.err.empty());
  EXPECT_EQ(typo.err[0], "commtrace: 'reprot' is not a commtrace command (dump, demo, report, merge, diff, export, watch, collect, settings)");
  const CliResult help = runCli(dir, {"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(joined(help.out).find("dump"), std::string::npos) << joined(help.out);
}

TEST(DumpCli, DamagedFileIsDumpedWithTheDamageReported) {
  TempDir dir;
  const BuiltTrace built = sampleTrace();
  std::vector<uint8_t> bytes = built.bytes;
  ASSERT_EQ(built.chunk_begin.size(), 2u);
  const uint64_t damaged_at = built.chunk_begin[1];
  bytes[(built.chunk_begin[1] + built.chunk_end[1]) / 2] ^= 0x10;  // the second chunk is lost
  // then an intact chunk (the first again: its string table is its own),
  bytes.insert(bytes.end(), built.bytes.begin() + static_cast<ptrdiff_t>(built.chunk_begin[0]),
               built.bytes.begin() + static_cast<ptrdiff_t>(built.chunk_end[0]));
  // and a last chunk cut short, as a kill mid-write leaves it
  const uint64_t torn_at = bytes.size();
  bytes.insert(bytes.end(), built.bytes.begin() + static_cast<ptrdiff_t>(built.chunk_begin[0]),
               built.bytes.begin() + static_cast<ptrdiff_t>(built.chunk_end[0] - 3));
  const std::string path = testing::pathIn(dir, "damaged.ctrace");
  testing::writeFile(path, bytes);
  const CliResult r = runCli(dir, {"dump", path});
  EXPECT_EQ(r.exit_code, 0) << joined(r.err);
  EXPECT_EQ(r.out.size(), 1 + 2 * built.expected[0].size()) << "the header line and the intact chunks";
  // The damaged region named with file and offset, then the summary. The last chunk, cut
  // short, follows a chunk not marked closing: the file is open, that chunk the one being
  // written (or its writer killed), which the summary says.
  ASSERT_EQ(r.err.size(), 2u) << joined(r.err);
  EXPECT_EQ(r.err[0].rfind("commtrace: " + path + ": offset " + std::to_string(damaged_at) + ": ", 0), 0u) << r.err[0];
  EXPECT_NE(r.err[1].find("1 damaged region(s)"), std::string::npos) << r.err[1];
  EXPECT_NE(r.err[1].find("not closed by its writer"), std::string::npos) << r.err[1];
  EXPECT_NE(r.err[1].find("the last " + std::to_string(bytes.size() - torn_at) + " bytes are a chunk not yet complete"), std::string::npos)
      << r.err[1];
}

// As the README shows it: several files at once, or directories (per-node subdirectories
// included); a path naming nothing is said and exits 1 after the rest is dumped.
TEST(DumpCli, SeveralFilesDirectoriesAndAMissingPath) {
  TempDir dir;
  const BuiltTrace built = sampleTrace();
  std::filesystem::create_directories(testing::pathIn(dir, "run/node1"));
  const std::string a = testing::pathIn(dir, "run/a.ctrace"), b = testing::pathIn(dir, "run/node1/b.ctrace");
  testing::writeFile(a, built.bytes);
  testing::writeFile(b, built.bytes);
  const size_t per_file = 1 + recordCount(built);

  CliResult r = runCli(dir, {"dump", a, b});
  EXPECT_EQ(r.exit_code, 0) << joined(r.err);
  EXPECT_EQ(r.out.size(), 2 * per_file);

  r = runCli(dir, {"dump", testing::pathIn(dir, "run")});
  EXPECT_EQ(r.exit_code, 0) << joined(r.err);
  ASSERT_EQ(r.out.size(), 2 * per_file);
  EXPECT_EQ(r.out[0].rfind("# " + a + ":", 0), 0u) << r.out[0];
  EXPECT_EQ(r.out[per_file].rfind("# " + b + ":", 0), 0u) << r.out[per_file];

  const std::string missing = testing::pathIn(dir, "missing.ctrace");
  r = runCli(dir, {"dump", missing, a});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out.size(), per_file) << "the readable file is still dumped";
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(r.err[0], "commtrace: " + missing + ": no such file or directory");
}

}  // namespace
}  // namespace commtrace
