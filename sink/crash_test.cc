// A traced process killed with SIGKILL while it records: its file is readable up to the
// last complete chunk, every record of every complete chunk is there, and a chunk cut off
// mid-write is reported as a torn tail.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <thread>

#include "sink/flusher.h"
#include "tests/support/sink_test_support.h"

namespace commtrace {
namespace {

using testing::TempDir;

constexpr uint64_t kMarkerComm = 0xC4A5'0000'0000'0001ull;  // tells our records from any other

// The child: records collectives numbered 0, 1, 2, ... until it is killed.
[[noreturn]] void recordUntilKilled(const std::string& dir) {
  FlusherOptions options;
  options.dir = dir;
  options.flush_period_ms = 10;
  options.chunk_records = 500;
  Flusher flusher(options);
  if (!flusher.start()) _exit(3);
  const StringId func = StringTable::global().intern("AllReduce");
  for (uint64_t seq = 0;;) {
    CollRecord r{};
    r.comm_id = kMarkerComm;
    r.func = func;
    r.seq = seq;
    r.cpu_start_ns = nowNs();
    r.cpu_end_ns = r.cpu_start_ns + 100;
    r.bytes = seq * 4096;
    if (record(r) == PushResult::kDropped) {
      std::this_thread::yield();  // the ring is full: the same sequence number again
      continue;
    }
    ++seq;
    if (seq % 64 == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

// Counts the complete chunks of the one trace file in dir (0 while there is none).
size_t chunksIn(const std::string& dir) {
  const auto files = testing::traceFilesIn(dir);
  if (files.size() != 1) return 0;
  TraceReader reader;
  std::string error;
  if (!reader.open(files[0], error)) return 0;
  size_t n = 0;
  DecodedChunk chunk;
  while (reader.next(chunk)) ++n;
  return n;
}

void killWhileRecordingAndCheck(int min_chunks, std::chrono::microseconds extra_delay) {
  TempDir dir;
  const std::string run = testing::pathIn(dir, "run");
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) recordUntilKilled(run);

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (chunksIn(run) < static_cast<size_t>(min_chunks) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  std::this_thread::sleep_for(extra_delay);
  ASSERT_EQ(kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the child ended on its own: status " << status;

  const auto files = testing::traceFilesIn(run);
  ASSERT_EQ(files.size(), 1u);
  testing::ReadBack back = testing::readTrace(files[0]);
  ASSERT_TRUE(back.opened) << back.error;
  ASSERT_GE(back.chunks.size(), static_cast<size_t>(min_chunks));

  uint64_t expected_seq = 0;
  for (size_t k = 0; k < back.chunks.size(); ++k) {
    EXPECT_EQ(back.chunks[k].index, k) << "a chunk is missing before the kill point";
    for (const RecordSlot& s : back.chunks[k].records) {
      if (s.kind != RecordKind::kColl) continue;
      ASSERT_EQ(s.payload.coll.comm_id, kMarkerComm);
      ASSERT_EQ(s.payload.coll.seq, expected_seq) << "chunk " << k << ": records lost or out of order";
      ASSERT_EQ(s.payload.coll.bytes, expected_seq * 4096);
      ASSERT_EQ(back.reader->str(s.payload.coll.func), "AllReduce");
      ++expected_seq;
    }
  }
  EXPECT_GT(expected_seq, 0u);
  // The kill may land between two writes (a clean end) or in the middle of one (a torn
  // tail). Either way the file reads as open (its writer never marked it closed), and an open
  // file's frame cut short is the chunk being written, not damage; a kill never damages
  // anything before the last frame.
  const auto& issues = back.reader->issues();
  EXPECT_EQ(back.reader->state(), TraceReader::State::kOpen);
  EXPECT_TRUE(issues.empty()) << issues.front().message;
  std::printf("killed after %zu chunks, %llu records%s\n", back.chunks.size(),
              static_cast<unsigned long long>(expected_seq), back.reader->tornTail() ? ", torn tail" : "");
}

TEST(SinkCrash, SigkillLeavesEveryCompleteChunkReadable) {
  killWhileRecordingAndCheck(5, std::chrono::microseconds(0));
}

// Kill points spread over the flush cycle, so some land mid-write.
TEST(SinkCrash, SigkillAtVariousPointsOfTheFlushCycle) {
  for (int delay_us : {0, 1300, 3700, 6100, 8900}) {
    SCOPED_TRACE("extra delay " + std::to_string(delay_us) + " us");
    killWhileRecordingAndCheck(3, std::chrono::microseconds(delay_us));
    if (HasFatalFailure()) return;
  }
}

// A torn tail is what a kill mid-write leaves: built here exactly, since a real kill lands
// mid-write only by chance. The file was not closed: it reads as open, its cut frame as the
// chunk being written (whether its writer lives is for the report to judge, by the file's
// age), not as damage.
TEST(SinkCrash, KillMidWriteLeavesATornTailOfAnOpenFile) {
  TempDir dir;
  testing::SlotGenerator gen(8);
  std::vector<std::vector<RecordSlot>> chunks(3);
  for (auto& c : chunks) {
    for (int i = 0; i < 20; ++i) c.push_back(gen.make(RecordKind::kColl, 1));
  }
  const testing::BuiltTrace built = testing::buildTrace(chunks);
  const std::string path = testing::pathIn(dir, "torn.ctrace");
  const uint64_t cut = (built.chunk_begin[2] + built.chunk_end[2]) / 2;
  testing::writeFile(path, built.bytes.data(), cut);
  testing::ReadBack back = testing::readTrace(path);
  ASSERT_TRUE(back.opened) << back.error;
  ASSERT_EQ(back.chunks.size(), 2u);
  EXPECT_TRUE(back.reader->tornTail());
  EXPECT_EQ(back.reader->state(), TraceReader::State::kOpen);
  EXPECT_TRUE(back.reader->issues().empty()) << back.reader->issues()[0].message;
}

}  // namespace
}  // namespace commtrace
