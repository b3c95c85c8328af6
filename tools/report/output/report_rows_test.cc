// The row declarations (report_rows.h) and what is printed from them agree: SCHEMA.md's
// field tables, the top-level one included (the section registry's), are the declarations' (on a difference the test writes the corrected
// SCHEMA.md beside the build); every JSON row has the declared fields, in order, with the
// declared types, null only where declared so; the CSV files have the declared columns; the
// text tables the declared headers.
#include "tools/report/output/report_rows.h"

#include <gtest/gtest.h>

#include <cmath>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "tests/support/sample_report.h"
#include "tests/support/temp_dir.h"
#include "tools/report/output/csv_report.h"
#include "tools/report/output/json_report.h"
#include "tools/report/output/live_rules.h"
#include "tools/report/output/report_sections.h"
#include "tools/report/output/text_report.h"

namespace commtrace::report::rows {
namespace {

using Json = nlohmann::ordered_json;

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The alert lines' fields as the live rules declare them (live_rules.h): "alerts.jsonl" for
// those every line has, "alerts.jsonl STRAGGLER" and so on for each rule's.
std::map<std::string, std::string, std::less<>> alertTables() {
  const auto table = [](const auto& fields) {
    std::string out = "| field | type | meaning |\n|---|---|---|\n";
    for (const AlertFieldDoc& f : fields) out += "| `" + std::string(f.key) + "` | " + std::string(f.type) + " | " + std::string(f.meaning) + " |\n";
    return out;
  };
  RunModel run;
  std::map<std::string, std::string, std::less<>> out{{"alerts.jsonl", table(commonAlertFields())}};
  for (const auto& rule : makeLiveRules(run, {}, [](const AlertRow&) {})) out["alerts.jsonl " + std::string(rule->name())] = table(rule->alertFields());
  return out;
}

// The document's fields as the section registry (report_sections.h) writes them, in its order.
std::string topLevelTable() {
  std::string out = "| field | type | meaning |\n|---|---|---|\n";
  for (const ReportSection& s : reportSections())
    if (s.json) out += "| `" + std::string(s.key) + "` | " + std::string(s.type) + " | " + std::string(s.meaning) + " |\n";
  return out;
}

// Every table SCHEMA.md holds under a "<!-- fields: NAME -->" line, by NAME: the top level,
// each section's rows, the other declared rows, the alert lines.
std::map<std::string, std::string, std::less<>> declaredTables() {
  std::map<std::string, std::string, std::less<>> declared = alertTables();
  for (const SchemaTable& t : schemaTables()) declared.emplace(t.section, t.markdown);
  for (const ReportSection& s : reportSections())
    if (s.fields_markdown) declared.emplace(std::string(s.key) + "[]", s.fields_markdown());
  declared.emplace("top level", topLevelTable());
  return declared;
}

// SCHEMA.md with the table under each "<!-- fields: NAME -->" line replaced by the
// declaration's; markers naming no declared table are collected in `unknown`.
std::string withDeclaredTables(const std::string& doc, std::set<std::string>& seen, std::vector<std::string>& unknown) {
  const std::map<std::string, std::string, std::less<>> declared = declaredTables();
  std::istringstream in(doc);
  std::string out, line;
  bool skipping_table = false;
  while (std::getline(in, line)) {
    if (skipping_table && line.starts_with("|")) continue;
    skipping_table = false;
    out += line + '\n';
    constexpr std::string_view kMarker = "<!-- fields: ";
    if (!line.starts_with(kMarker) || !line.ends_with(" -->")) continue;
    const std::string section = line.substr(kMarker.size(), line.size() - kMarker.size() - 4);
    const auto it = declared.find(section);
    if (it == declared.end()) {
      unknown.push_back(section);
      continue;
    }
    seen.insert(section);
    out += it->second;
    skipping_table = true;
  }
  return out;
}

// A spreadsheet's cell, not a double's last bits: findings.csv read to_us 543374.1224999999.
TEST(ReportRows, CsvNumbersHaveTheDigitsADoubleKeeps) {
  EXPECT_EQ(rows::csvCell(std::nextafter(543374.1225, 0.0)), "543374.1225");  // shortest in full: 543374.1224999999
  EXPECT_EQ(rows::csvCell(0.0012345), "0.0012345");
  EXPECT_EQ(rows::csvCell(17.0), "17");
  EXPECT_EQ(rows::csvCell(1.0 / 3.0), "0.333333333333333");
}

TEST(ReportRows, SchemaMdHasEachDeclaredTableAsDeclared) {
  const std::string path = std::string(COMMTRACE_SOURCE_DIR) + "/tools/report/SCHEMA.md";
  const std::string doc = readFile(path);
  ASSERT_FALSE(doc.empty()) << path;
  std::set<std::string> seen;
  std::vector<std::string> unknown;
  const std::string expected = withDeclaredTables(doc, seen, unknown);
  EXPECT_TRUE(unknown.empty()) << "SCHEMA.md marks tables for rows nobody declares: " << testing::PrintToString(unknown);
  for (const auto& [name, table] : declaredTables()) EXPECT_TRUE(seen.contains(name)) << "SCHEMA.md lacks <!-- fields: " << name << " -->";
  if (expected != doc) {
    const std::string fixed = std::filesystem::absolute("SCHEMA.md.expected").string();
    std::ofstream(fixed, std::ios::binary) << expected;
    ADD_FAILURE() << "SCHEMA.md's field tables differ from report_rows.cc's declarations; the corrected file: " << fixed;
  }
}

bool hasKind(const Json& v, Kind kind) {
  switch (kind) {
    case Kind::kInteger: return v.is_number_integer();
    case Kind::kNumber: return v.is_number();
    case Kind::kString: return v.is_string();
    case Kind::kBool: return v.is_boolean();
    case Kind::kRankList: return v.is_array() && std::all_of(v.begin(), v.end(), [](const Json& r) { return r.is_number_integer(); });
  }
  return false;
}

// Each element of `array` has the declared fields in declaration order, then only the
// nested `parts` the declaration leaves out; a field is missing or null only where declared so.
template <class Row>
void expectAsDeclared(const Json& array, const Fields<Row>& fields, const std::string& where, std::set<std::string> parts = {}) {
  ASSERT_TRUE(array.is_array()) << where;
  ASSERT_FALSE(array.empty()) << where << ": the sample has no row to check";
  for (const Json& row : array) {
    std::vector<std::string> keys;
    for (const auto& [key, value] : row.items()) keys.push_back(key);
    size_t next = 0;
    for (const Field<Row>& f : fields) {
      const std::string key(f.key);
      if (next < keys.size() && keys[next] == key) {
        ++next;
        const Json& v = row.at(key);
        if (v.is_null()) EXPECT_EQ(f.presence, Presence::kOrNull) << where << "." << key << " is null";
        else EXPECT_TRUE(hasKind(v, f.kind)) << where << "." << key << " = " << v.dump() << " is not " << typeName(f.kind, f.presence);
      } else {
        EXPECT_EQ(f.presence, Presence::kOnlyWhenKnown) << where << "." << key << " is missing or out of order: " << row.dump();
      }
    }
    for (; next < keys.size(); ++next) EXPECT_TRUE(parts.contains(keys[next])) << where << " has an undeclared field " << keys[next];
  }
}

TEST(ReportRows, JsonRowsAreAsDeclared) {
  std::ostringstream out;
  writeJson(testutil::sampleReport(), out);
  const Json j = Json::parse(out.str());
  expectAsDeclared(j["clocks"]["fits"], clockFitFields(), "clocks.fits");
  expectAsDeclared(j["communicators"], communicatorFields(), "communicators");
  expectAsDeclared(j["bandwidth"], bandwidthFields(), "bandwidth");
  expectAsDeclared(j["matrix"]["slices"], matrixSliceFields(), "matrix.slices", {"cells", "cells_total"});
  for (const Json& slice : j["matrix"]["slices"]) expectAsDeclared(slice["cells"], matrixCellFields(), "matrix.slices[].cells");
  expectAsDeclared(j["overlap"], overlapFields(), "overlap", {"kernel_clock", "steps"});
  expectAsDeclared(j["overlap"][0]["steps"], overlapStepFields(), "overlap[].steps");
  expectAsDeclared(j["peer_waits"], peerWaitFields(), "peer_waits");
  for (const char* list : {"top", "per_rank", "per_rank_by_count"}) expectAsDeclared(j["kernels"][list], kernelFields(), list);
  expectAsDeclared(j["kernels"]["types"], kernelTypeFields(), "kernels.types");
  expectAsDeclared(j["cuda_sync"], cudaSyncFields(), "cuda_sync", {"calls"});
  expectAsDeclared(j["cuda_sync"][0]["calls"], cudaSyncCallFields(), "cuda_sync[].calls", {"streams"});
  expectAsDeclared(j["cuda_sync"][0]["calls"][0]["streams"], cudaSyncStreamFields(), "cuda_sync[].calls[].streams");
  expectAsDeclared(j["stragglers"], stragglerFields(), "stragglers");
  expectAsDeclared(j["straggler_hosts"], hostStragglerFields(), "straggler_hosts");
  expectAsDeclared(j["straggler_comms"], commStragglerFields(), "straggler_comms");
  expectAsDeclared(j["links"], linkFields(), "links");
  expectAsDeclared(j["mismatches"], mismatchFields(), "mismatches");
}

std::vector<std::string> csvHeaderOf(const std::string& path) {
  std::string line;
  std::ifstream(path) >> line;
  if (!line.empty() && line.back() == '\r') line.pop_back();
  std::vector<std::string> columns;
  std::istringstream cells(line);
  for (std::string cell; std::getline(cells, cell, ',');) columns.push_back(cell);
  return columns;
}

// Each declared row's file has its columns (a long-format file its parent's key columns in front).
TEST(ReportRows, CsvFilesHaveTheDeclaredColumns) {
  testutil::TempDir dir;
  std::ostringstream err;
  ASSERT_TRUE(writeCsv(testutil::sampleReport(), dir.path(), err)) << err.str();
  const auto expect = [&](const char* file, std::vector<std::string> front, const std::vector<std::string>& keys) {
    front.insert(front.end(), keys.begin(), keys.end());
    EXPECT_EQ(csvHeaderOf(dir.path() + "/" + file), front) << file;
  };
  expect("clocks.csv", {}, csvHeader(clockFitFields()));
  expect("communicators.csv", {}, csvHeader(communicatorFields()));
  expect("bandwidth.csv", {}, csvHeader(bandwidthFields()));
  expect("matrix_cells.csv", csvHeader(matrixSliceFields()), csvHeader(matrixCellFields()));
  expect("overlap.csv", {}, csvHeader(overlapFields()));
  expect("overlap_steps.csv", {"rank"}, csvHeader(overlapStepFields()));
  expect("peer_waits.csv", {}, csvHeader(peerWaitFields()));
  expect("kernels.csv", {}, csvHeader(kernelFields()));
  expect("kernels_by_count.csv", {}, csvHeader(kernelFields()));
  expect("kernel_types.csv", {}, csvHeader(kernelTypeFields()));
  expect("cuda_sync.csv", {"rank", "host"}, csvHeader(cudaSyncCallFields()));
  expect("cuda_sync_streams.csv", {"rank", "call"}, csvHeader(cudaSyncStreamFields()));
  expect("stragglers.csv", {}, csvHeader(stragglerFields()));
  expect("straggler_hosts.csv", {}, csvHeader(hostStragglerFields()));
  expect("straggler_comms.csv", {}, csvHeader(commStragglerFields()));
  expect("links.csv", {}, csvHeader(linkFields()));
  expect("mismatches.csv", {}, csvHeader(mismatchFields()));
}

// The text report's header line of a table is its declared headers, in order.
template <class Row>
void expectHeaderLine(const std::string& text, const Fields<Row>& fields, const std::string& where) {
  std::vector<std::string> headers;
  for (const Table::Column& c : peopleColumns(fields)) headers.push_back(c.header);
  ASSERT_FALSE(headers.empty()) << where;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    size_t at = 0;
    bool all = true;
    for (const std::string& h : headers) {
      at = line.find("  " + h, at);
      if (at == std::string::npos) {
        all = false;
        break;
      }
      at += h.size() + 2;
    }
    if (all) return;
  }
  ADD_FAILURE() << where << ": no line of the text report has the headers " << testing::PrintToString(headers);
}

TEST(ReportRows, TextTablesHaveTheDeclaredHeaders) {
  std::ostringstream out;
  writeText(testutil::sampleReport(), out);
  const std::string text = out.str();
  expectHeaderLine(text, communicatorFields(), "communicators");
  expectHeaderLine(text, bandwidthFields(), "bandwidth");
  expectHeaderLine(text, matrixCellFields(), "heaviest pairs");
  expectHeaderLine(text, overlapFields(), "overlap");
  expectHeaderLine(text, peerWaitFields(), "peer waits");
  expectHeaderLine(text, kernelFields(), "kernels");
  expectHeaderLine(text, kernelTypeFields(), "kernel types");
  expectHeaderLine(text, stragglerFields(), "stragglers");
  expectHeaderLine(text, commStragglerFields(), "straggler comms");
  expectHeaderLine(text, linkFields(), "links");
  expectHeaderLine(text, mismatchFields(), "mismatches");
}

// People read a field in the unit a word of its key names.
TEST(ReportRows, PeopleReadEachKeysUnit) {
  EXPECT_EQ(peopleCell("time_us_p50", 2500.0), "2.5 ms");
  EXPECT_EQ(peopleCell("busbw_gbs_p50", 0.004), "<0.01");
  EXPECT_EQ(peopleCell("bytes", uint64_t{4u << 20}), "4 MiB");
  EXPECT_EQ(peopleCell("p2p_bytes", uint64_t{1024}), "1 KiB");
  EXPECT_EQ(peopleCell("late_fraction", 0.25), "25.0%");
  EXPECT_EQ(peopleCell("share_pct", 12.345), "12.3%");
  EXPECT_EQ(peopleCell("confidence", 0.5), "0.50");
  EXPECT_EQ(peopleCell("instances", uint64_t{7}), "7");  // "us" is a word of no other key
  EXPECT_EQ(peopleCell("offset_us", Value()), "-");
  EXPECT_EQ(peopleCell("ranks", std::vector<int>{0, 1, 2, 5}), "0-2,5");
  EXPECT_EQ(csvCell(Value()), "");
  EXPECT_EQ(csvCell(0.1), "0.1");
  EXPECT_EQ(csvCell(std::vector<int>{3, 1}), "3 1");
}

}  // namespace
}  // namespace commtrace::report::rows
