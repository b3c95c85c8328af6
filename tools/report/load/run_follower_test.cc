// Following a run while it is written: the files of a finished synthetic run are copied into
// a watched directory a few cuts at a time (files appearing one after another, frames cut in
// half), polled after each cut; what the follower joins is what loading the finished run
// joins, and the watermark only moves forward.
#include "tools/report/load/run_follower.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/support/temp_dir.h"
#include "tools/report/build_report.h"
#include "tools/report/load/run_loader.h"
#include "tools/synthetic/run_writer.h"

namespace commtrace::report {
namespace {

namespace fs = std::filesystem;

std::vector<char> bytesOf(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void writePrefix(const fs::path& path, const std::vector<char>& bytes, size_t n) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(n));
}

TEST(RunFollower, JoinsWhatTheFinishedRunHoldsWhileItsFilesGrow) {
  testutil::TempDir dir;
  synthetic::SyntheticRunOptions options;
  options.dir = dir.path() + "/finished";
  options.ranks = 8;
  options.collectives_per_rank = 2000;
  synthetic::SyntheticRunTruth truth;
  std::string error;
  ASSERT_TRUE(synthetic::writeSyntheticRun(options, truth, error)) << error;

  RunModel whole;
  StreamedAnalyses loaded;
  std::ostringstream err;
  ASSERT_TRUE(loadRun({.paths = {options.dir}, .stream = &loaded, .keep_ops = false}, whole, err)) << err.str();

  const fs::path watched = dir.path() + "/live";
  fs::create_directories(watched);
  std::vector<std::pair<fs::path, std::vector<char>>> files;
  for (const auto& entry : fs::directory_iterator(options.dir)) files.emplace_back(watched / entry.path().filename(), bytesOf(entry.path()));
  ASSERT_EQ(files.size(), 8u);

  RunModel run;
  StreamedAnalyses followed;
  RunFollower follower(watched.string(), run, followed);
  constexpr size_t kCuts = 7;
  uint64_t watermark = 0;
  for (size_t cut = 1; cut <= kCuts; ++cut) {
    for (size_t f = 0; f < files.size(); ++f) {
      if (f > cut + 1) continue;  // later ranks' files appear later
      const std::vector<char>& bytes = files[f].second;
      writePrefix(files[f].first, bytes, cut == kCuts ? bytes.size() : bytes.size() * cut / kCuts + 13);  // + 13: frames cut mid-way
    }
    ASSERT_TRUE(follower.poll(err)) << err.str();
    EXPECT_GE(follower.watermark(), watermark) << "cut " << cut;
    watermark = follower.watermark();
    EXPECT_EQ(follower.closedFiles(), cut == kCuts ? files.size() : 0u) << "cut " << cut;
  }
  EXPECT_EQ(follower.files(), files.size());
  follower.finish();

  EXPECT_EQ(followed.shapes.instancesPerComm(run.comms.size()), loaded.shapes.instancesPerComm(whole.comms.size()));
  EXPECT_EQ(followed.transfer_gaps.transfers(), loaded.transfer_gaps.transfers());
  EXPECT_TRUE(followed.gaps.gaps().empty()) << "every instance joined whole";
  const std::vector<BandwidthRow> a = followed.bandwidth.rows(run), b = loaded.bandwidth.rows(whole);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(std::tie(a[i].comm, a[i].func, a[i].count, a[i].timed), std::tie(b[i].comm, b[i].func, b[i].count, b[i].timed)) << i;
    EXPECT_DOUBLE_EQ(a[i].time_us_p50, b[i].time_us_p50) << i;
  }
}

}  // namespace
}  // namespace commtrace::report
