// The terminal report: findings before anything else, aligned columns, long tables cut
// with a pointer to the formats that hold every row, and no zeros where nothing was measured.
#include "tools/report/output/text_report.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <iterator>
#include <sstream>

#include "tests/support/run_program.h"
#include "tests/support/sample_report.h"
#include "tools/report/output/table.h"

namespace commtrace::report {
namespace {

std::string text(const Report& r) {
  std::ostringstream out;
  writeText(r, out);
  return out.str();
}

// The line holding `what`, or "".
std::string lineWith(const std::string& all, const std::string& what) {
  for (const std::string& line : testutil::linesOf(all))
    if (line.find(what) != std::string::npos) return line;
  return "";
}

TEST(TextReport, FindingsComeFirst) {
  const std::vector<std::string> lines = testutil::linesOf(text(testutil::sampleReport()));
  ASSERT_GE(lines.size(), 3u);
  EXPECT_EQ(lines[0], "Findings");
  EXPECT_EQ(lines[1], "  1. Rank 2 (node1) is the straggler: it kept the others waiting 12 ms in total (compute, confidence 0.95).");
  EXPECT_EQ(lines[2].rfind("  2. The link 2 <-> 3 is slow", 0), 0u);
}

TEST(TextReport, SummarisesTheRun) {
  const std::string out = text(testutil::sampleReport());
  EXPECT_NE(lineWith(out, "files").find("5 found: 4 read (1 damaged), 1 not readable as traces"), std::string::npos);
  EXPECT_NE(lineWith(out, "records lost").find("3 dropped"), std::string::npos);
  EXPECT_NE(lineWith(out, "clocks").find("3 of 4 processes aligned"), std::string::npos);
  EXPECT_NE(out.find("commtrace: /runs/job-7/notes.txt: not a commtrace trace file"), std::string::npos);
}

// When the ops ran, in UTC; where a file stops more than a second before the last op ends
// (a run still being written, a rank that died), up to when every file speaks.
TEST(TextReport, SaysWhenTheOpsRanAndUpToWhenEveryFileReaches) {
  Report r = testutil::sampleReport();
  EXPECT_NE(lineWith(text(r), "time").find("not known (these files carry no wall-clock time)"), std::string::npos)
      << "ops without wall-clock times (PyTorch profiler traces)";
  r.run.ops = 0;
  EXPECT_NE(lineWith(text(r), "time").find("no op recorded"), std::string::npos);
  r.run.ops = 130;
  r.run.first_op_utc_ns = 1'700'000'000'000'000'000ull;  // 2023-11-14 22:13:20 UTC
  r.run.last_op_utc_ns = r.run.first_op_utc_ns + 90'250'000'000ull;
  r.run.all_files_reach_utc_ns = r.run.last_op_utc_ns - 500'000'000;  // flushed apart, no more
  EXPECT_EQ(lineWith(text(r), "time"), "  time           2023-11-14 22:13:20.000 UTC to 2023-11-14 22:14:50.250 UTC (90.2 s)");
  r.run.all_files_reach_utc_ns = r.run.first_op_utc_ns + 60'000'000'000ull;
  EXPECT_NE(lineWith(text(r), "time").find("; every file reaches 2023-11-14 22:14:20.000 UTC, some stop earlier"),
            std::string::npos);
}

TEST(TextReport, StragglerTableListsTheRanksAndTheEvidence) {
  const std::string out = text(testutil::sampleReport());
  const std::string row = lineWith(out, "compute ");
  EXPECT_NE(row.find("node1"), std::string::npos) << row;
  EXPECT_NE(row.find("12 ms"), std::string::npos) << row;
  EXPECT_NE(row.find("90.0%"), std::string::npos) << row;
  EXPECT_NE(out.find("  rank 2: created the delay in 90.0% of 100 synchronizations"), std::string::npos) << out;
  EXPECT_NE(out.find("compute kernels account for 92% of the longer gap: its compute kernels ran longer"), std::string::npos) << out;
  EXPECT_NE(out.find("  2 <-> 3: best 3.10 GB/s over 40 ops (40 on this pair alone), 2% of the 140.00 GB/s median of 6 intra-host links"),
            std::string::npos) << out;
  EXPECT_NE(out.find("  confidence, 0 to 1: how clearly the rank is a straggler."), std::string::npos) << out;
  EXPECT_NE(out.find("  confidence, 0 to 1: how far below 50.0% of the median of its kind"), std::string::npos) << out;
}

// Communicator ranks say so in words (a bare "c3" explained nothing).
TEST(TextReport, MismatchRanksSayWhetherTheyAreCommunicatorRanks) {
  Report r = testutil::sampleReport();
  r.mismatches.push_back({0x1234abcd5678ef00ull, "world", "Broadcast", 58, {1, 2, 3}, true, "missing", "three seats empty"});
  const std::string out = text(r);
  EXPECT_NE(lineWith(out, "three seats empty").find("  comm ranks 1-3  "), std::string::npos) << out;
  EXPECT_NE(lineWith(out, "never issued AllReduce seq 57").find("  3  "), std::string::npos) << out;
}

TEST(TextReport, UnmeasuredOverlapShowsDashesAndTheReason) {
  const std::string out = text(testutil::sampleReport());
  const size_t section = out.find("\nOverlap");
  ASSERT_NE(section, std::string::npos);
  const std::vector<std::string> lines = testutil::linesOf(out.substr(section + 1));
  // title, header, rank 0, rank 1, note
  ASSERT_GE(lines.size(), 5u);
  EXPECT_NE(lines[1].find("comm time"), std::string::npos) << "communication time, not a communicator: " << lines[1];
  EXPECT_NE(lines[2].find("25.0%"), std::string::npos) << lines[2];
  EXPECT_NE(lines[3].find("1.8 ms"), std::string::npos) << lines[3];
  EXPECT_EQ(lines[3].find("0 ns"), std::string::npos) << lines[3];
  EXPECT_EQ(lines[3].find("0.0%"), std::string::npos) << lines[3];
  EXPECT_EQ(lines[4], "  - = not measured: no compute-kernel records: CUPTI was not attached");
}

TEST(TextReport, CudaSyncListsCallsWithStreamRowsUnderCallsOnSeveral) {
  const std::string out = text(testutil::sampleReport());
  const size_t section = out.find("\nCPU blocked in CUDA synchronisation");
  ASSERT_NE(section, std::string::npos);
  const std::vector<std::string> lines = testutil::linesOf(out.substr(section + 1));
  // title, header, rank 0 stream sync over 2 streams, its 2 stream rows, rank 0 device sync, rank 1 stream sync
  ASSERT_GE(lines.size(), 7u);
  EXPECT_NE(lines[2].find("cudaStreamSynchronize  all 2"), std::string::npos) << lines[2];
  EXPECT_NE(lines[2].find("3       1  2.5 ms  800 us  1.2 ms"), std::string::npos) << lines[2];  // calls, failed, total, p50, max
  EXPECT_NE(lines[3].find("0x000000000005a000"), std::string::npos) << lines[3];
  EXPECT_NE(lines[4].find("per-thread default"), std::string::npos) << lines[4];
  EXPECT_NE(lines[5].find("cudaDeviceSynchronize  -"), std::string::npos) << lines[5];
  EXPECT_NE(lines[6].find("legacy default"), std::string::npos) << lines[6];
}

TEST(TextReport, NoCudaSyncCallsSaysWhy) {
  report::Report r = testutil::sampleReport();
  r.cuda_sync.clear();
  EXPECT_NE(text(r).find("none recorded: no CUDA sync call went through the preload face"), std::string::npos);
}

// A 4-byte AllReduce moves ~0.00003 GB/s: "0.00" would say nothing moved, "3.3e-05" is
// noise in a column of GB/s. JSON and CSV keep the value.
TEST(TextReport, BandwidthsBelowTheLastDigitPrintAsLessThanIt) {
  Report r = testutil::sampleReport();
  r.bandwidth = {{0x42, "w", "AllReduce", 4, "4-8 B", "RING", "LL", 20, 20, 210, 210, 1.9e-05, 3.3e-05, 0, ""}};
  const std::string out = text(r);
  std::istringstream row(lineWith(out, " AllReduce "));
  std::vector<std::string> cells{std::istream_iterator<std::string>(row), std::istream_iterator<std::string>()};
  EXPECT_EQ(std::count(cells.begin(), cells.end(), "<0.01"), 2) << "algBw and busBw: " << lineWith(out, " AllReduce ");
  EXPECT_NE(lineWith(out, "  measured").find("<0.01"), std::string::npos) << "the sample's 0.0035 GB/s matrix cell";
  EXPECT_EQ(out.find("e-0"), std::string::npos);
}

// A row summarised by a sketch marks its percentiles and says by how much they may be off;
// exact rows carry no mark.
TEST(TextReport, ApproximatePercentilesAreMarkedAndExplained) {
  const std::string out = text(testutil::sampleReport());
  EXPECT_NE(lineWith(out, "4 MiB").find("~350 us"), std::string::npos) << lineWith(out, "4 MiB");
  EXPECT_EQ(lineWith(out, "64 KiB").find('~'), std::string::npos) << lineWith(out, "64 KiB");
  EXPECT_NE(out.find("  ~ = within 1.0% of the exact percentile"), std::string::npos) << out;
}

TEST(TextReport, LongTablesAreCutWithAPointerToTheFullFormats) {
  Report r = testutil::sampleReport();
  r.stragglers.ranks.clear();
  for (int rank = 0; rank < 25; ++rank) r.stragglers.ranks.push_back({rank, "n", 10, 25.0 - rank, 0.1, 1, "none", 0.1, false});
  const std::string out = text(r);
  EXPECT_NE(out.find("  (15 more rows: --format json or csv for all)"), std::string::npos);
  EXPECT_NE(lineWith(out, "  9  n"), "");
  EXPECT_EQ(lineWith(out, " 10  n"), "");
}

TEST(TextTable, PadsColumnsAndRightAlignsNumbers) {
  Table t{{{"name"}, {"bytes", Table::Align::kRight}}, {{"a", "1"}, {"longer", "12345678"}}};
  std::ostringstream out;
  printTable(t, out, 10);
  EXPECT_EQ(out.str(),
            "  name       bytes\n"
            "  a              1\n"
            "  longer  12345678\n");
}

}  // namespace
}  // namespace commtrace::report
