// A report of a run still being written, and of one whose processes stopped without
// closing their files: files open and written lately are "still being written", the ops not
// yet in every file are no mismatch; files open and quiet for long are "left open", with
// their ranks, and what they lack is a mismatch that says so.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <utime.h>

#include <filesystem>
#include <sstream>

#include "tests/support/temp_dir.h"
#include "tools/report/finding_words.h"
#include "tools/report/build_report.h"
#include "tools/report/load/clock_align.h"
#include "tools/report/load/run_loader.h"
#include "tools/synthetic/run_writer.h"

namespace commtrace::report {
namespace {

Report reportOf(const std::string& dir) {
  RunModel run;
  StreamedAnalyses streamed;
  std::ostringstream err;
  EXPECT_TRUE(loadRun({.paths = {dir}, .stream = &streamed, .keep_ops = false}, run, err)) << err.str();
  EXPECT_EQ(err.str(), "");
  return buildReport(run, alignClocks(run, streamed.anchors), {}, streamed);
}

void writeRun(const std::string& dir, uint64_t in_flight_ops) {
  synthetic::SyntheticRunOptions options;
  options.dir = dir;
  options.ranks = 8;
  options.collectives_per_rank = 400;
  options.in_flight_ops = in_flight_ops;
  synthetic::SyntheticRunTruth truth;
  std::string error;
  ASSERT_TRUE(synthetic::writeSyntheticRun(options, truth, error)) << error;
}

bool hasFinding(const Report& r, const std::string& start) {
  for (const std::string& f : r.findings)
    if (f.rfind(start, 0) == 0) return true;
  return false;
}

std::string fileOfRank(const std::string& dir, int rank) {
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename().string().find("pid" + std::to_string(10'000 + rank) + "-") != std::string::npos) return e.path().string();
  return "";
}

TEST(LiveRun, AFinishedRunIsClosed) {
  testutil::TempDir dir;
  writeRun(dir.path(), 0);
  const Report r = reportOf(dir.path());
  EXPECT_EQ(r.run.files_being_written, 0);
  EXPECT_EQ(r.run.files_left_open, 0);
  EXPECT_EQ(r.mismatches_total, 0u);
  EXPECT_FALSE(hasFinding(r, "Live:"));
}

TEST(LiveRun, OpsNotYetInEveryFileAreNoMismatch) {
  testutil::TempDir dir;
  writeRun(dir.path(), 3);  // rank r's last r % 4 collectives not written yet
  const Report r = reportOf(dir.path());
  EXPECT_EQ(r.run.files_being_written, 8);
  EXPECT_EQ(r.run.damaged_files, 0);
  EXPECT_EQ(r.mismatches_total, 0u);
  EXPECT_TRUE(hasFinding(r, "Live: 8 of 8 trace files are still being written"));

  // A torn tail, as a reader meets the chunk being written: still no damage.
  const std::string rank1 = fileOfRank(dir.path(), 1);
  ASSERT_FALSE(rank1.empty());
  const auto size = std::filesystem::file_size(rank1);
  std::filesystem::resize_file(rank1, size - 10);
  const Report torn = reportOf(dir.path());
  EXPECT_EQ(torn.run.damaged_files, 0);
  EXPECT_TRUE(torn.run.problems.empty()) << torn.run.problems.front();
  EXPECT_EQ(torn.mismatches_total, 0u);
}

TEST(LiveRun, FilesQuietForLongAreLeftOpenAndWhatTheyLackIsAMismatch) {
  testutil::TempDir dir;
  writeRun(dir.path(), 3);
  const std::string rank3 = fileOfRank(dir.path(), 3);
  ASSERT_FALSE(rank3.empty());
  const time_t an_hour_ago = time(nullptr) - 3600;
  const utimbuf times{an_hour_ago, an_hour_ago};
  ASSERT_EQ(utime(rank3.c_str(), &times), 0);
  const Report r = reportOf(dir.path());
  EXPECT_EQ(r.run.files_being_written, 7);
  EXPECT_EQ(r.run.files_left_open, 1);
  EXPECT_EQ(r.run.ranks_left_open, std::vector<int>{3});
  EXPECT_EQ(r.run.left_open_last_written_utc_ns, static_cast<uint64_t>(an_hour_ago) * 1'000'000'000ull);
  EXPECT_TRUE(hasFinding(r, "Left open: rank(s) 3 stopped writing"));
  ASSERT_GT(r.mismatches_total, 0u);
  for (const MismatchRow& m : r.mismatches) {
    EXPECT_EQ(m.kind, "file ends");
    EXPECT_EQ(m.missing_ranks, std::vector<int>{3});
    EXPECT_NE(mismatchDetail(m).find("its file was left open"), std::string::npos) << mismatchDetail(m);
  }
}

// A finished run's file cut in half (a copy gone wrong) read as "still being written", 0
// damaged, while its rank contributed nothing past the cut: its mtime is long after the last
// chunk it holds, which no live writer's is. Now it is left open, cut short and damaged.
TEST(LiveRun, AFileCutShortAfterTheRunIsDamagedNotLive) {
  testutil::TempDir dir;
  writeRun(dir.path(), 0);
  const std::string rank2 = fileOfRank(dir.path(), 2);
  ASSERT_FALSE(rank2.empty());
  std::filesystem::resize_file(rank2, std::filesystem::file_size(rank2) / 2);
  const Report r = reportOf(dir.path());
  EXPECT_EQ(r.run.files_being_written, 0);
  EXPECT_EQ(r.run.files_left_open, 1);
  EXPECT_EQ(r.run.files_cut_short, 1);
  EXPECT_EQ(r.run.damaged_files, 1);
  ASSERT_EQ(r.run.problems.size(), 1u);
  EXPECT_NE(r.run.problems[0].find("cut short or changed after its writer stopped"), std::string::npos) << r.run.problems[0];
  EXPECT_TRUE(hasFinding(r, "Left open: rank(s) 2 stopped writing"));
  EXPECT_FALSE(hasFinding(r, "Live:"));
}

}  // namespace
}  // namespace commtrace::report
