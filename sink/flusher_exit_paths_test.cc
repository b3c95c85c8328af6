// The recorder's side of the process-life mechanisms, in-process (sanitizer builds too):
// RingRegistry::flushAndWait, which exit paths and signal handlers use, and what a forked
// child does to forget its parent's recorder (RingRegistry::forgetParentRingsAfterFork,
// Flusher::forgetAfterFork). The preloaded library's use of them is tested in child
// processes by preload_process_test.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <thread>
#include <vector>

#include "ringbuffer/ring_registry.h"
#include "sink/flusher.h"
#include "tests/support/sink_test_support.h"

namespace commtrace {
namespace {

using testing::TempDir;

constexpr uint32_t kNeverOnItsOwn = 60'000;  // ms: the flusher writes only when asked

void recordColls(uint64_t comm_id, uint64_t first_seq, uint64_t n) {
  for (uint64_t seq = first_seq; seq < first_seq + n; ++seq) {
    CollRecord r{};
    r.comm_id = comm_id;
    r.seq = seq;
    record(r);
  }
}

// Seq numbers of the collectives in every trace file of dir, per communicator.
std::map<uint64_t, std::vector<uint64_t>> collsIn(const std::string& file) {
  std::map<uint64_t, std::vector<uint64_t>> out;
  testing::ReadBack back = testing::readTrace(file);
  EXPECT_TRUE(back.opened) << back.error;
  for (const DecodedChunk& chunk : back.chunks) {
    for (const RecordSlot& s : chunk.records) {
      if (s.kind == RecordKind::kColl) out[s.payload.coll.comm_id].push_back(s.payload.coll.seq);
    }
  }
  return out;
}

std::vector<uint64_t> seqs(uint64_t first, uint64_t n) {
  std::vector<uint64_t> out;
  for (uint64_t i = first; i < first + n; ++i) out.push_back(i);
  return out;
}

FlusherOptions optionsFor(const std::string& dir) {
  FlusherOptions options;
  options.dir = dir;
  options.flush_period_ms = kNeverOnItsOwn;
  return options;
}

TEST(FlusherExitPaths, FlushAndWaitWithoutAFlusherReturnsAtOnce) {
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(RingRegistry::global().flushAndWait(5000));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
}

// Records from several threads, then one flushAndWait: every record made before it is in
// the file when it returns, while the flusher keeps running.
TEST(FlusherExitPaths, FlushAndWaitWritesEverythingRecordedBefore) {
  TempDir dir;
  Flusher flusher(optionsFor(dir.path()));
  ASSERT_TRUE(flusher.start());
  std::vector<std::thread> producers;
  for (uint64_t t = 0; t < 4; ++t) producers.emplace_back([t] { recordColls(0xF1 + t, 0, 500); });
  for (auto& p : producers) p.join();
  ASSERT_TRUE(RingRegistry::global().flushAndWait(10'000));
  const auto files = testing::traceFilesIn(dir.path());
  ASSERT_EQ(files.size(), 1u);
  const auto colls = collsIn(files[0]);
  for (uint64_t t = 0; t < 4; ++t) EXPECT_EQ(colls.at(0xF1 + t), seqs(0, 500)) << "thread " << t;

  // Again, from two threads at once (two signals, or a signal during _exit).
  recordColls(0xF9, 0, 100);
  std::thread other([] { EXPECT_TRUE(RingRegistry::global().flushAndWait(10'000)); });
  EXPECT_TRUE(RingRegistry::global().flushAndWait(10'000));
  other.join();
  EXPECT_EQ(collsIn(files[0]).at(0xF9), seqs(0, 100));
  flusher.stop();
}

TraceReader::State stateOf(const std::string& file) { return testing::readTrace(file).reader->state(); }

// The chunk that answers a closing flush request (exit, exec, a signal) and the last one at
// stop() are marked closing, so the file reads as closed; a process that goes on recording
// after a closing flush (a SIGINT it handled) reopens it with its next chunk.
TEST(FlusherExitPaths, ClosingFlushesAndStopCloseTheFile) {
  TempDir dir;
  Flusher flusher(optionsFor(dir.path()));
  ASSERT_TRUE(flusher.start());
  recordColls(0xC1, 0, 10);
  ASSERT_TRUE(RingRegistry::global().flushAndWait(10'000));
  const auto files = testing::traceFilesIn(dir.path());
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(stateOf(files[0]), TraceReader::State::kOpen);
  ASSERT_TRUE(RingRegistry::global().flushAndWait(10'000, /*closing=*/true));  // nothing new: a chunk all the same
  EXPECT_EQ(stateOf(files[0]), TraceReader::State::kClosed);
  recordColls(0xC1, 10, 10);
  ASSERT_TRUE(RingRegistry::global().flushAndWait(10'000));
  EXPECT_EQ(stateOf(files[0]), TraceReader::State::kOpen);
  // Two closing requests at once (two signals): each returns with the file closed.
  recordColls(0xC1, 20, 10);
  std::thread other([] { EXPECT_TRUE(RingRegistry::global().flushAndWait(10'000, true)); });
  EXPECT_TRUE(RingRegistry::global().flushAndWait(10'000, true));
  other.join();
  EXPECT_EQ(stateOf(files[0]), TraceReader::State::kClosed);
  recordColls(0xC1, 30, 10);
  ASSERT_TRUE(RingRegistry::global().flushAndWait(10'000));
  EXPECT_EQ(stateOf(files[0]), TraceReader::State::kOpen);
  ASSERT_TRUE(flusher.stop());
  EXPECT_EQ(stateOf(files[0]), TraceReader::State::kClosed);
  EXPECT_EQ(collsIn(files[0]).at(0xC1), seqs(0, 40));
}

// The child forgets what the parent recorded but had not written, starts its own flusher
// and file, and never writes the parent's records; the parent's file is untouched by it.
TEST(FlusherExitPaths, ForkedChildForgetsTheParentsRecorder) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "ThreadSanitizer does not support threads started after a multi-threaded fork";
#endif
  TempDir parent_dir, child_dir;
  auto* parent_flusher = new Flusher(optionsFor(parent_dir.path()));
  ASSERT_TRUE(parent_flusher->start());
  // One round trip puts the flusher to sleep: a sanitizer's allocator is not fork-safe
  // while another thread allocates (the flusher starting up).
  ASSERT_TRUE(RingRegistry::global().flushAndWait(10'000));
  recordColls(0xA, 0, 100);  // still in this thread's ring when it forks
  std::fflush(nullptr);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // What the preloaded library's pthread_atfork child handler does; the parent's Flusher
    // object is left alone.
    RingRegistry::global().forgetParentRingsAfterFork();
    Flusher::forgetAfterFork();
    Flusher own(optionsFor(child_dir.path()));
    if (!own.start()) _exit(10);
    recordColls(0xB, 0, 50);
    own.stop();
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  recordColls(0xA, 100, 50);
  parent_flusher->stop();
  delete parent_flusher;

  const auto parent_files = testing::traceFilesIn(parent_dir.path());
  const auto child_files = testing::traceFilesIn(child_dir.path());
  ASSERT_EQ(parent_files.size(), 1u);
  ASSERT_EQ(child_files.size(), 1u);
  EXPECT_EQ(collsIn(parent_files[0]), (std::map<uint64_t, std::vector<uint64_t>>{{0xA, seqs(0, 150)}}));
  EXPECT_EQ(collsIn(child_files[0]), (std::map<uint64_t, std::vector<uint64_t>>{{0xB, seqs(0, 50)}}));
}

// A process with nothing to record still writes a chunk (its clock sample) every heartbeat,
// so that `commtrace watch` can tell a live process waiting in a hung op from a dead one.
TEST(FlusherHeartbeat, AnIdleProcessWritesAClockSampleEveryHeartbeat) {
  TempDir dir;
  FlusherOptions options = optionsFor(dir.path());
  options.flush_period_ms = 20;
  options.heartbeat_ms = 100;
  Flusher flusher(options);
  ASSERT_TRUE(flusher.start());
  std::this_thread::sleep_for(std::chrono::milliseconds(550));
  ASSERT_TRUE(flusher.stop());
  testing::ReadBack back = testing::readTrace(flusher.path());
  ASSERT_TRUE(back.opened) << back.error;
  // 5 heartbeats in 550 ms (4 on a loaded machine) and the closing chunk; never one per period.
  EXPECT_GE(back.chunks.size(), 5u);
  EXPECT_LE(back.chunks.size(), 7u);
  for (const DecodedChunk& chunk : back.chunks) {
    ASSERT_EQ(chunk.records.size(), 1u);
    EXPECT_EQ(chunk.records[0].kind, RecordKind::kClockSample);
  }
}

}  // namespace
}  // namespace commtrace
