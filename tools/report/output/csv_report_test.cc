// The CSV report: one file per table, RFC 4180 quoting that reads back to the same text,
// the matrix as a sender x receiver grid, empty cells for what was not measured.
#include "tools/report/output/csv_report.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/support/run_program.h"
#include "tests/support/sample_report.h"
#include "tests/support/temp_dir.h"
#include "tools/report/output/json_report.h"

namespace commtrace::report {
namespace {

using Rows = std::vector<std::vector<std::string>>;

// A strict RFC 4180 reader: quoted fields may hold commas, doubled quotes and line breaks.
Rows parseCsv(const std::string& text) {
  Rows rows(1, std::vector<std::string>(1));
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    std::string& field = rows.back().back();
    if (quoted) {
      if (c != '"') field += c;
      else if (i + 1 < text.size() && text[i + 1] == '"') field += '"', ++i;
      else quoted = false;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      rows.back().emplace_back();
    } else if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
      ++i;
      rows.emplace_back(1);
    } else {
      field += c;
    }
  }
  if (rows.back() == std::vector<std::string>(1)) rows.pop_back();  // after the last line break
  return rows;
}

Rows readCsv(const std::string& dir, const std::string& file) { return parseCsv(testutil::readText(dir + "/" + file)); }

class CsvReport : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ostringstream err;
    ASSERT_TRUE(writeCsv(testutil::sampleReport(), dir_.path() + "/csv", err)) << err.str();
    EXPECT_EQ(err.str(), "");
  }
  std::string dir() const { return dir_.path() + "/csv"; }

 private:
  testutil::TempDir dir_;
};

TEST_F(CsvReport, WritesOneFilePerTable) {
  for (const char* f : {"run.csv", "problems.csv", "findings.csv", "clocks.csv", "communicators.csv", "bandwidth.csv", "matrix_bytes.csv",
                        "matrix_p2p_bytes.csv", "matrix_time_us.csv", "matrix_cells.csv", "overlap.csv", "overlap_steps.csv", "cuda_sync.csv", "cuda_sync_streams.csv",
                        "stragglers.csv", "straggler_hosts.csv", "straggler_comms.csv", "links.csv", "lateness_heatmap.csv", "mismatches.csv"})
    EXPECT_TRUE(std::filesystem::is_regular_file(dir() + "/" + f)) << f;
}

TEST_F(CsvReport, QuotedFieldsReadBackUnchanged) {
  const Rows comms = readCsv(dir(), "communicators.csv");
  ASSERT_EQ(comms.size(), 3u);
  EXPECT_EQ(comms[0], (std::vector<std::string>{"id", "name", "size", "ranks", "hosts", "instances"}));
  EXPECT_EQ(comms[2][1], testutil::kTrickyName);
  EXPECT_EQ(comms[1], (std::vector<std::string>{"0x1234abcd5678ef00", "world", "4", "0 1 2 3", "2", "100"}));
  const std::string raw = testutil::readText(dir() + "/communicators.csv");
  EXPECT_NE(raw.find("\"tp,\"\"0\"\"\n<b>&x</b>\""), std::string::npos) << raw;
}

TEST_F(CsvReport, BandwidthAndStragglerRowsHoldTheNumbers) {
  const Rows bw = readCsv(dir(), "bandwidth.csv");
  ASSERT_EQ(bw.size(), 5u);
  EXPECT_EQ(bw[0][0], "comm");
  EXPECT_EQ(bw[0][12], "busbw_gbs_p50");
  EXPECT_EQ(bw[1][3], std::to_string(4u << 20));
  EXPECT_DOUBLE_EQ(std::stod(bw[1][12]), 17.95);
  EXPECT_EQ(bw[4][12], "");  // no size: no bandwidth
  EXPECT_EQ(bw[0][13], "percentile_error");
  EXPECT_EQ(bw[1][13], "0.01");
  EXPECT_EQ(bw[2][13], "0");
  EXPECT_EQ(bw[4][14], "size not recorded (datatype Unknown)");
  const Rows s = readCsv(dir(), "stragglers.csv");
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0][3], "wait_caused_us");
  EXPECT_DOUBLE_EQ(std::stod(s[1][3]), 12000.5);
  EXPECT_EQ(s[1][6], "compute");
}

// stragglers.csv was once in the analysis' order while the JSON, text and HTML tables
// sorted their own copies: every format now prints the Report's order, whatever it is.
TEST_F(CsvReport, StragglersInTheReportsOrderAsTheJsonHasThem) {
  Report r = testutil::sampleReport();
  std::swap(r.stragglers.ranks.front(), r.stragglers.ranks.back());
  testutil::TempDir dir;
  std::ostringstream err;
  ASSERT_TRUE(writeCsv(r, dir.path(), err)) << err.str();
  std::ostringstream json;
  writeJson(r, json);
  const nlohmann::json from_json = nlohmann::json::parse(json.str()).at("stragglers");
  const Rows csv = readCsv(dir.path(), "stragglers.csv");
  ASSERT_EQ(csv.size(), r.stragglers.ranks.size() + 1);
  ASSERT_EQ(from_json.size(), r.stragglers.ranks.size());
  for (size_t i = 0; i < r.stragglers.ranks.size(); ++i) {
    EXPECT_EQ(csv[i + 1][0], std::to_string(r.stragglers.ranks[i].rank)) << i;
    EXPECT_EQ(from_json[i].at("rank"), r.stragglers.ranks[i].rank) << i;
  }
}

TEST_F(CsvReport, MatrixIsASenderByReceiverGrid) {
  const Rows m = readCsv(dir(), "matrix_bytes.csv");
  ASSERT_EQ(m.size(), 5u);
  EXPECT_EQ(m[0], (std::vector<std::string>{"src\\dst", "0", "1", "2", "3"}));
  EXPECT_EQ(m[3][0], "2");
  EXPECT_EQ(m[3][4], std::to_string(1u << 20));  // rank 2 -> rank 3
  EXPECT_EQ(m[4][3], "0");
}

TEST_F(CsvReport, UnmeasuredOverlapAndMissingHeatmapBinsAreEmptyCells) {
  const Rows o = readCsv(dir(), "overlap.csv");
  ASSERT_EQ(o.size(), 3u);
  EXPECT_EQ(o[0], (std::vector<std::string>{"rank", "available", "reason", "comm_us", "overlapped_us", "exposed_us", "idle_us",
                                            "compute_only_us", "overlap_pct", "step_source", "step_count", "out_of_order"}));
  EXPECT_EQ(o[1][4], "500");
  EXPECT_EQ(o[2][1], "false");
  EXPECT_EQ(o[2][2], "no compute-kernel records: CUPTI was not attached");
  EXPECT_EQ(o[2][3], "1800");
  EXPECT_EQ(o[2][4], "");
  EXPECT_EQ(o[2][7], "");
  EXPECT_EQ(o[2][8], "");
  EXPECT_EQ(o[2][11], "0");
  const Rows heat = readCsv(dir(), "lateness_heatmap.csv");
  ASSERT_EQ(heat.size(), 1u + 4 * 3);
  EXPECT_EQ(heat[1 + 3 + 2], (std::vector<std::string>{"1", "2", "2000", ""}));  // rank 1, bin 2: no data
}

TEST_F(CsvReport, CudaSyncRowsPerCallAndPerStream) {
  const Rows calls = readCsv(dir(), "cuda_sync.csv");
  ASSERT_EQ(calls.size(), 4u);
  EXPECT_EQ(calls[0], (std::vector<std::string>{"rank", "host", "call", "count", "failed", "total_us", "p50_us", "max_us"}));
  EXPECT_EQ(calls[1], (std::vector<std::string>{"0", "node0", "cudaStreamSynchronize", "3", "1", "2500.5", "800", "1200.25"}));
  EXPECT_EQ(calls[2][2], "cudaDeviceSynchronize");
  EXPECT_EQ(calls[3][0], "1");
  const Rows streams = readCsv(dir(), "cuda_sync_streams.csv");
  ASSERT_EQ(streams.size(), 4u);  // device sync takes no stream
  EXPECT_EQ(streams[0], (std::vector<std::string>{"rank", "call", "stream", "count", "failed", "total_us", "p50_us", "max_us"}));
  EXPECT_EQ(streams[1], (std::vector<std::string>{"0", "cudaStreamSynchronize", "0x000000000005a000", "2", "0", "2000", "800", "1200.25"}));
  EXPECT_EQ(streams[2][2], "0x0000000000000002");
  EXPECT_EQ(streams[3][2], "0x0000000000000000");
}

TEST(CsvReportErrors, UnwritableDirectoryIsReported) {
  testutil::TempDir tmp;
  const std::string file = tmp.path() + "/a-file";
  std::ofstream(file) << "x";
  std::ostringstream err;
  EXPECT_FALSE(writeCsv(testutil::sampleReport(), file + "/csv", err));
  EXPECT_EQ(err.str().rfind("commtrace: " + file + "/csv", 0), 0u) << err.str();
}

}  // namespace
}  // namespace commtrace::report
