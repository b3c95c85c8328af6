// Following a run while it is written: the files of a finished synthetic run are copied into
// a watched directory a few cuts at a time (files appearing one after another, frames cut in
// half), polled after each cut; what the follower joins is what loading the finished run
// joins, and the watermark only moves forward.
#include "tools/report/load/run_follower.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "tests/support/open_descriptors.h"
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

// Each communicator's collective instances, by communicator id.
std::map<uint64_t, uint64_t> instancesById(const RunModel& run, const StreamedAnalyses& analyses) {
  std::map<uint64_t, uint64_t> out;
  const std::vector<uint64_t> counts = analyses.shapes.instancesPerComm(run.comms.size());
  for (size_t c = 0; c < counts.size(); ++c) out[run.comms[c].id] = counts[c];
  return out;
}

// A synthetic run of `ranks` x `collectives` written to `dir` and loaded as `report` loads it.
void writeAndLoad(const std::string& dir, int ranks, int collectives, RunModel& whole, StreamedAnalyses& loaded) {
  synthetic::SyntheticRunOptions options;
  options.dir = dir;
  options.ranks = ranks;
  options.collectives_per_rank = collectives;
  synthetic::SyntheticRunTruth truth;
  std::string error;
  ASSERT_TRUE(synthetic::writeSyntheticRun(options, truth, error)) << error;
  std::ostringstream err;
  ASSERT_TRUE(loadRun({.paths = {dir}, .stream = &loaded, .keep_ops = false}, whole, err)) << err.str();
}

TEST(RunFollower, JoinsWhatTheFinishedRunHoldsWhileItsFilesGrow) {
  testutil::TempDir dir;
  const std::string finished = dir.path() + "/finished";
  RunModel whole;
  StreamedAnalyses loaded;
  ASSERT_NO_FATAL_FAILURE(writeAndLoad(finished, 8, 2000, whole, loaded));

  const fs::path watched = dir.path() + "/live";
  fs::create_directories(watched);
  std::vector<std::pair<fs::path, std::vector<char>>> files;
  for (const auto& entry : fs::directory_iterator(finished)) files.emplace_back(watched / entry.path().filename(), bytesOf(entry.path()));
  ASSERT_EQ(files.size(), 8u);

  RunModel run;
  StreamedAnalyses followed;
  RunFollower follower(watched.string(), run, followed);
  std::ostringstream err;
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

  // Communicators are numbered as first seen, and the followed files appeared in another
  // order: compared by communicator id.
  EXPECT_EQ(instancesById(run, followed), instancesById(whole, loaded));
  EXPECT_EQ(followed.transfer_gaps.transfers(), loaded.transfer_gaps.transfers());
  EXPECT_TRUE(followed.gaps.gaps().empty()) << "every instance joined whole";
  const auto bandwidthById = [](const RunModel& m, const StreamedAnalyses& s) {  // BandwidthRow::comm is the id
    std::map<std::tuple<uint64_t, std::string, std::string, std::string, std::string>, std::tuple<uint64_t, uint64_t, double>> out;
    for (const BandwidthRow& row : s.bandwidth.rows(m)) out[{row.comm, row.func, row.bucket, row.algo, row.proto}] = {row.count, row.timed, row.time_us_p50};
    return out;
  };
  const auto a = bandwidthById(run, followed), b = bandwidthById(whole, loaded);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(a, b);
}

// A directory of more files than the follower may hold descriptors for: every file is still
// followed to its end (each reopened when its turn comes), as the finished run is loaded, and
// no more descriptors than allowed are held.
TEST(RunFollower, FollowsMoreFilesThanItHoldsDescriptorsFor) {
  testutil::TempDir dir;
  const std::string run_dir = dir.path() + "/run";
  RunModel whole;
  StreamedAnalyses loaded;
  ASSERT_NO_FATAL_FAILURE(writeAndLoad(run_dir, 12, 600, whole, loaded));

  RunModel run;
  StreamedAnalyses followed;
  RunFollower follower(run_dir, run, followed, /*max_open=*/3);
  std::ostringstream err;
  size_t most_held = 0;
  for (int polls = 0; polls < 50 && follower.closedFiles() < 12; ++polls) {
    ASSERT_TRUE(follower.poll(err)) << err.str();
    most_held = std::max(most_held, testutil::descriptorsInto(run_dir));
  }
  EXPECT_EQ(follower.files(), 12u);
  EXPECT_EQ(follower.closedFiles(), 12u);
  follower.finish();
  EXPECT_EQ(instancesById(run, followed), instancesById(whole, loaded));
  EXPECT_EQ(followed.transfer_gaps.transfers(), loaded.transfer_gaps.transfers());
  EXPECT_TRUE(followed.gaps.gaps().empty()) << "every instance joined whole";
  EXPECT_LE(most_held, 3u);
  EXPECT_GE(most_held, 1u);
}

// A process that died mid-run leaves its file open and silent: once it has been silent for
// the silent period, it no longer holds the watermark back; the files still growing do.
TEST(RunFollower, ASilentFileStopsHoldingTheWatermarkBack) {
  testutil::TempDir dir;
  synthetic::SyntheticRunOptions options;
  options.dir = dir.path() + "/run";
  options.ranks = 4;
  options.collectives_per_rank = 2000;
  options.in_flight_ops = 2;  // files left open, as by processes that never closed them
  synthetic::SyntheticRunTruth truth;
  std::string error;
  ASSERT_TRUE(synthetic::writeSyntheticRun(options, truth, error)) << error;
  const fs::path watched = dir.path() + "/live";
  fs::create_directories(watched);
  std::vector<std::pair<fs::path, std::vector<char>>> files;
  for (const auto& entry : fs::directory_iterator(options.dir)) files.emplace_back(watched / entry.path().filename(), bytesOf(entry.path()));
  std::sort(files.begin(), files.end());
  writePrefix(files[0].first, files[0].second, files[0].second.size() / 3);  // the dead one stopped a third in
  for (size_t f = 1; f < files.size(); ++f) writePrefix(files[f].first, files[f].second, files[f].second.size() * 2 / 3);
  RunModel run;
  StreamedAnalyses followed;
  RunFollower follower(watched.string(), run, followed);
  follower.setSilentAfter(std::chrono::milliseconds(300));
  std::ostringstream err;
  ASSERT_TRUE(follower.poll(err)) << err.str();
  const uint64_t held = follower.watermark();
  ASSERT_GT(held, 0u);

  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  for (size_t f = 1; f < files.size(); ++f) writePrefix(files[f].first, files[f].second, files[f].second.size());  // the others go on
  ASSERT_TRUE(follower.poll(err)) << err.str();
  EXPECT_EQ(follower.silentFiles(std::chrono::milliseconds(300)), 1u);
  const uint64_t moved = follower.watermark();
  EXPECT_GT(moved, held) << "the dead process's file no longer holds the others' windows";

  // It grows again (it was frozen, not dead): it counts again.
  writePrefix(files[0].first, files[0].second, files[0].second.size() / 2);
  ASSERT_TRUE(follower.poll(err)) << err.str();
  EXPECT_EQ(follower.silentFiles(std::chrono::milliseconds(300)), 0u);
  EXPECT_LT(follower.watermark(), moved);
}

}  // namespace
}  // namespace commtrace::report
