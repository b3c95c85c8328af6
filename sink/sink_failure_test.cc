// When the trace cannot be written (no run directory, a file in its place, a full disk
// simulated by RLIMIT_FSIZE) the host program is untouched: one "commtrace:" line on
// stderr, no signal, its own exit code, producers that keep storing without blocking, and
// every record that did not reach the file counted as sink_failed. Each case runs in a
// forked child, whose stderr comes back through a pipe.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <thread>

#include "sink/flusher.h"
#include "sink/trace_file.h"
#include "tests/support/sink_test_support.h"

namespace commtrace {
namespace {

using testing::TempDir;

constexpr int kChildExitCode = 42;  // the host program's own exit code
constexpr uint64_t kRecords = 20'000;
constexpr uint64_t kMarkerComm = 0x5151'0000'0000'0005ull;

struct ChildResult {
  int status = 0;
  std::string err;                          // everything the child wrote to stderr
  std::map<std::string, std::string> facts;  // key=value lines the child reported
};

std::string readAll(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return out;
    }
  }
}

// Runs body in a forked child with stderr captured; body reports facts by writing
// "key=value" lines to the fd it is given and returns the child's exit code.
ChildResult runChild(const std::function<int(int facts_fd)>& body) {
  int err_pipe[2], facts_pipe[2];
  if (pipe(err_pipe) != 0 || pipe(facts_pipe) != 0) abort();
  const pid_t child = fork();
  if (child < 0) abort();
  if (child == 0) {
    close(err_pipe[0]);
    close(facts_pipe[0]);
    dup2(err_pipe[1], STDERR_FILENO);
    close(err_pipe[1]);
    _exit(body(facts_pipe[1]));
  }
  close(err_pipe[1]);
  close(facts_pipe[1]);
  ChildResult result;
  std::string facts;
  std::thread err_reader([&] { result.err = readAll(err_pipe[0]); });
  facts = readAll(facts_pipe[0]);
  err_reader.join();
  close(err_pipe[0]);
  close(facts_pipe[0]);
  waitpid(child, &result.status, 0);
  std::istringstream lines(facts);
  for (std::string line; std::getline(lines, line);) {
    const size_t eq = line.find('=');
    if (eq != std::string::npos) result.facts[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return result;
}

void fact(int fd, const std::string& key, uint64_t value) { dprintf(fd, "%s=%llu\n", key.c_str(), static_cast<unsigned long long>(value)); }
void fact(int fd, const std::string& key, const std::string& value) { dprintf(fd, "%s=%s\n", key.c_str(), value.c_str()); }

// The host program of every case: starts the flusher, records kRecords collectives in
// bursts of 1000, timing each record() call, stops, reports. Between bursts it waits
// (up to 10 s) for the flusher to take what it stored, failing sink or not; so a ring of
// 16384 never fills unless the flusher stops draining.
int hostProgram(const FlusherOptions& options, int facts_fd) {
  Flusher flusher(options);
  if (!flusher.start()) return 10;
  uint64_t stored = 0, dropped = 0, slowest_ns = 0;
  const StringId func = StringTable::global().intern("AllReduce");
  for (uint64_t i = 0; i < kRecords; ++i) {
    CollRecord r{};
    r.comm_id = kMarkerComm;
    r.func = func;
    r.seq = i;
    r.cpu_start_ns = nowNs();
    const PushResult result = record(r);
    slowest_ns = std::max(slowest_ns, nowNs() - r.cpu_start_ns);
    (result == PushResult::kDropped ? dropped : stored) += 1;
    if (i % 1000 == 999) {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      for (;;) {
        const FlusherStats now = flusher.stats();
        if (now.records_written + now.sinkFailedTotal() >= stored) break;
        if (std::chrono::steady_clock::now() > deadline) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
  }
  flusher.stop();
  const FlusherStats stats = flusher.stats();
  fact(facts_fd, "stored", stored);
  fact(facts_fd, "dropped", dropped);
  fact(facts_fd, "slowest_record_ns", slowest_ns);
  fact(facts_fd, "records_written", stats.records_written);
  fact(facts_fd, "chunks_written", stats.chunks_written);
  fact(facts_fd, "coll_sink_failed", stats.sink_failed[static_cast<int>(RecordKind::kColl)]);
  fact(facts_fd, "sink_failed_total", stats.sinkFailedTotal());
  fact(facts_fd, "path", flusher.path());
  return kChildExitCode;
}

FlusherOptions optionsFor(const std::string& dir) {
  FlusherOptions options;
  options.dir = dir;
  options.flush_period_ms = 10;
  options.chunk_records = 1000;
  return options;
}

std::vector<std::string> linesOf(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

uint64_t num(const ChildResult& r, const std::string& key) {
  auto it = r.facts.find(key);
  return it == r.facts.end() ? ~0ull : std::stoull(it->second);
}

// What holds in every case: the host ran to its own end, said nothing but one line,
// and never waited or lost a record to the failing sink.
void expectHostUntouched(const ChildResult& r, const std::string& must_mention) {
  ASSERT_TRUE(WIFEXITED(r.status)) << (WIFSIGNALED(r.status) ? "killed by signal " + std::to_string(WTERMSIG(r.status)) : "")
                                   << "; stderr: " << r.err;
  EXPECT_EQ(WEXITSTATUS(r.status), kChildExitCode) << "stderr: " << r.err;
  const auto lines = linesOf(r.err);
  ASSERT_EQ(lines.size(), 1u) << "stderr: " << r.err;
  EXPECT_EQ(lines[0].rfind("commtrace: ", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find(must_mention), std::string::npos) << lines[0];
  EXPECT_EQ(num(r, "stored"), kRecords);
  EXPECT_EQ(num(r, "dropped"), 0u);
  EXPECT_LT(num(r, "slowest_record_ns"), 500'000'000u) << "record() blocked";
}

// commtrace-run/<job id> on a fresh machine: every missing level is made.
TEST(SinkFailure, RunDirectoryWhoseParentsAreMissingIsCreated) {
  TempDir dir;
  const std::string run = testing::pathIn(dir, "no/such/parent/run");
  const ChildResult r = runChild([&](int fd) { return hostProgram(optionsFor(run), fd); });
  EXPECT_EQ(num(r, "stored"), kRecords);
  EXPECT_GE(num(r, "records_written"), kRecords);  // and what the flusher adds of its own (drop summaries)
  EXPECT_EQ(num(r, "sink_failed_total"), 0u);
  EXPECT_TRUE(std::filesystem::is_directory(run));
}

TEST(SinkFailure, RunDirectoryBelowARegularFile) {
  TempDir dir;
  const std::string blocker = testing::pathIn(dir, "file");
  testing::writeFile(blocker, std::vector<uint8_t>{'x'});
  const std::string run = blocker + "/run";
  const ChildResult r = runChild([&](int fd) { return hostProgram(optionsFor(run), fd); });
  expectHostUntouched(r, run);
  EXPECT_EQ(num(r, "records_written"), 0u);
  EXPECT_EQ(num(r, "chunks_written"), 0u);
  EXPECT_EQ(num(r, "coll_sink_failed"), kRecords);
  EXPECT_EQ(testing::readFile(blocker), std::vector<uint8_t>{'x'});
}

TEST(SinkFailure, RunDirectoryPathIsARegularFile) {
  TempDir dir;
  const std::string run = testing::pathIn(dir, "run");
  testing::writeFile(run, std::vector<uint8_t>{'x'});
  const ChildResult r = runChild([&](int fd) { return hostProgram(optionsFor(run), fd); });
  expectHostUntouched(r, run);
  EXPECT_EQ(num(r, "records_written"), 0u);
  EXPECT_EQ(num(r, "coll_sink_failed"), kRecords);
  EXPECT_EQ(testing::readFile(run), std::vector<uint8_t>{'x'}) << "the file in the way is left alone";
}

// A host name is whatever the system was told (sethostname takes any bytes): as a part of
// the file's name it is one path component, never a way out of the run directory.
TEST(SinkFailure, AHostNameNeverLeadsTheFileOutOfTheRunDirectory) {
  TempDir dir;
  const std::string run = testing::pathIn(dir, "a/run");
  for (const std::string host : {"../../escaped", "/..", "..", "node1/../../x", ""}) {
    FileHeaderFields header;
    header.host = host;
    header.pid = 42;
    header.start_realtime_ns = 7;
    TraceFile file;
    std::string error;
    ASSERT_TRUE(file.create(run, header, error)) << host << ": " << error;
    EXPECT_EQ(std::filesystem::path(file.path()).parent_path(), std::filesystem::path(run)) << host << ": " << file.path();
  }
  std::vector<std::string> outside;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir.path()))
    if (entry.is_regular_file() && entry.path().parent_path() != std::filesystem::path(run)) outside.push_back(entry.path());
  EXPECT_TRUE(outside.empty()) << outside.front();
}

// RLIMIT_FSIZE: a write past the limit fails with EFBIG and raises SIGXFSZ, whose default
// action kills the process. Only the flusher may ever meet it.
ChildResult runWithFileSizeLimit(const std::string& run, rlim_t limit) {
  return runChild([&](int fd) {
    const rlimit r{limit, limit};
    if (setrlimit(RLIMIT_FSIZE, &r) != 0) return 11;
    return hostProgram(optionsFor(run), fd);
  });
}

TEST(SinkFailure, DiskFullAfterSomeChunks) {
  TempDir dir;
  const std::string run = testing::pathIn(dir, "run");
  constexpr rlim_t kLimit = 16384;
  const ChildResult r = runWithFileSizeLimit(run, kLimit);
  expectHostUntouched(r, "File too large");
  const auto files = testing::traceFilesIn(run);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(r.facts.at("path"), files[0]);
  EXPECT_LE(std::filesystem::file_size(files[0]), kLimit);

  // What is in the file plus what was counted as failed is everything recorded.
  testing::ReadBack back = testing::readTrace(files[0]);
  ASSERT_TRUE(back.opened) << back.error;
  uint64_t in_file = 0;
  for (const DecodedChunk& chunk : back.chunks) {
    for (const RecordSlot& s : chunk.records) {
      if (s.kind != RecordKind::kColl) continue;
      EXPECT_EQ(s.payload.coll.comm_id, kMarkerComm);
      EXPECT_EQ(s.payload.coll.seq, in_file) << "the file holds a prefix of the records";
      ++in_file;
    }
  }
  EXPECT_GT(in_file, 0u) << "some chunks fit under the limit";
  EXPECT_LT(in_file, kRecords);
  EXPECT_EQ(num(r, "coll_sink_failed"), kRecords - in_file);
  EXPECT_EQ(num(r, "chunks_written"), back.chunks.size());
  // The chunk that hit the limit was cut short: a torn tail, reported, nothing else.
  EXPECT_LE(back.reader->issues().size(), 1u);
}

TEST(SinkFailure, DiskFullBeforeTheFileHeader) {
  TempDir dir;
  const std::string run = testing::pathIn(dir, "run");
  const ChildResult r = runWithFileSizeLimit(run, 10);
  expectHostUntouched(r, "File too large");
  EXPECT_EQ(num(r, "records_written"), 0u);
  EXPECT_EQ(num(r, "coll_sink_failed"), kRecords);
  EXPECT_TRUE(testing::traceFilesIn(run).empty()) << "a file without its header is left behind";
}

// Space comes back (the soft limit, first `full_at` bytes, is raised): writing resumes after
// the torn chunk, or the file is created then, and the count of records lost meanwhile
// reaches the file as a drop summary. `lines`: what stderr says (the failure, a late file).
void expectWritingToResumeWithSpace(rlim_t full_at, size_t lines) {
  TempDir dir;
  const std::string run = testing::pathIn(dir, "run");
  const ChildResult r = runChild([&](int fd) {
    rlimit limit{full_at, RLIM_INFINITY};
    if (setrlimit(RLIMIT_FSIZE, &limit) != 0) return 11;
    Flusher flusher(optionsFor(run));
    if (!flusher.start()) return 10;
    const StringId func = StringTable::global().intern("AllReduce");
    uint64_t seq = 0;
    auto burst = [&](uint64_t n) {
      for (uint64_t i = 0; i < n; ++i, ++seq) {
        CollRecord c{};
        c.comm_id = kMarkerComm;
        c.func = func;
        c.seq = seq;
        while (record(c) == PushResult::kDropped) std::this_thread::yield();
      }
    };
    burst(kRecords);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (flusher.stats().sinkFailedTotal() == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    const uint64_t failed_while_full = flusher.stats().sink_failed[static_cast<int>(RecordKind::kColl)];
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // more failing writes
    limit.rlim_cur = RLIM_INFINITY;
    if (setrlimit(RLIMIT_FSIZE, &limit) != 0) return 12;
    // A file not yet created is tried again on a back-off (up to a minute), so what the
    // host records until the next try is lost by design: record until a chunk is written,
    // then the burst whose records must all reach the file.
    const uint64_t chunks_before = flusher.stats().chunks_written;
    const auto resume_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (flusher.stats().chunks_written == chunks_before && std::chrono::steady_clock::now() < resume_deadline) {
      burst(10);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    burst(1000);
    flusher.stop();
    fact(fd, "failed_while_full", failed_while_full);
    fact(fd, "coll_sink_failed", flusher.stats().sink_failed[static_cast<int>(RecordKind::kColl)]);
    fact(fd, "recorded", seq);
    return kChildExitCode;
  });
  ASSERT_TRUE(WIFEXITED(r.status)) << "stderr: " << r.err;
  ASSERT_EQ(WEXITSTATUS(r.status), kChildExitCode) << "stderr: " << r.err;
  ASSERT_EQ(linesOf(r.err).size(), lines) << r.err;
  EXPECT_GT(num(r, "failed_while_full"), 0u);
  const uint64_t failed = num(r, "coll_sink_failed");

  const auto files = testing::traceFilesIn(run);
  ASSERT_EQ(files.size(), 1u);
  testing::ReadBack back = testing::readTrace(files[0]);
  ASSERT_TRUE(back.opened) << back.error;
  uint64_t in_file = 0, reported_sink_failed = 0;
  bool after_gap = false;
  for (const DecodedChunk& chunk : back.chunks) {
    for (const RecordSlot& s : chunk.records) {
      if (s.kind == RecordKind::kColl) {
        ++in_file;
        after_gap |= s.payload.coll.seq + 1 == num(r, "recorded");  // the last record
        // the chunks that failed carried strings: the first after them must not need them
        EXPECT_EQ(back.reader->str(s.payload.coll.func), "AllReduce") << "seq " << s.payload.coll.seq;
      }
      if (s.kind == RecordKind::kDropSummary && s.payload.drop_summary.dropped_kind == static_cast<uint8_t>(RecordKind::kColl)) {
        reported_sink_failed = std::max(reported_sink_failed, s.payload.drop_summary.sink_failed);
      }
    }
  }
  EXPECT_TRUE(after_gap) << "the last record, recorded once there was space again, is not in the file";
  EXPECT_EQ(in_file + failed, num(r, "recorded"));
  EXPECT_EQ(reported_sink_failed, failed) << "the file does not say how many records were lost";
  // The chunk cut short by the limit (unless the limit fell on a frame boundary) lies
  // between intact ones: damage, skipped, reported.
  EXPECT_LE(back.reader->issues().size(), 1u);
  EXPECT_FALSE(back.reader->tornTail());
}

TEST(SinkFailure, DiskFullThenSpaceAgain) { expectWritingToResumeWithSpace(8192, 1); }

// No room even for the file's header at the first record: the file is created once there
// is (before, the run was lost for good: no file, nothing of what came after).
TEST(SinkFailure, DiskFullAtTheStartThenSpaceAgain) { expectWritingToResumeWithSpace(10, 2); }


// A disk whose writes hang while g_disk_hangs is set (an NFS server gone away).
std::atomic<bool> g_disk_hangs{false};
ssize_t hangingWrite(int fd, const void* bytes, size_t size) {
  while (g_disk_hangs.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return ::write(fd, bytes, size);
}

// The exit paths' bound: stop() and a flush request give up after their timeouts while the
// disk hangs, the host goes on; with a healthy disk the same calls write everything.
ChildResult stopWithin200Ms(const std::string& run, bool disk_hangs) {
  return runChild([&](int fd) {
    FlusherOptions options = optionsFor(run);
    options.flush_period_ms = 60'000;  // only the requests under test write
    options.write = &hangingWrite;
    auto* flusher = new Flusher(options);  // a stop that gives up leaves it to its thread
    if (!flusher->start()) return 10;
    record(CollRecord{.comm_id = kMarkerComm, .seq = 1});
    g_disk_hangs = disk_hangs;
    const uint64_t t0 = nowNs();
    fact(fd, "flushed", RingRegistry::global().flushAndWait(100));
    fact(fd, "flush_ms", (nowNs() - t0) / 1'000'000);
    record(CollRecord{.comm_id = kMarkerComm, .seq = 2});
    const uint64_t t1 = nowNs();
    fact(fd, "stopped", flusher->stop(200));
    fact(fd, "stop_ms", (nowNs() - t1) / 1'000'000);
    fact(fd, "records_written", flusher->stats().records_written);
    if (!disk_hangs) delete flusher;
    return kChildExitCode;
  });
}

TEST(SinkFailure, ExitFlushAndStopGiveUpOnAHangingDisk) {
  TempDir dir;
  const ChildResult r = stopWithin200Ms(testing::pathIn(dir, "run"), true);
  ASSERT_TRUE(WIFEXITED(r.status)) << r.err;
  EXPECT_EQ(WEXITSTATUS(r.status), kChildExitCode);
  EXPECT_EQ(num(r, "flushed"), 0u);
  EXPECT_GE(num(r, "flush_ms"), 100u);
  EXPECT_LT(num(r, "flush_ms"), 1000u);
  EXPECT_EQ(num(r, "stopped"), 0u);
  EXPECT_GE(num(r, "stop_ms"), 200u);
  EXPECT_LT(num(r, "stop_ms"), 1000u);
  EXPECT_EQ(num(r, "records_written"), 0u);
}

TEST(SinkFailure, ExitFlushAndStopWriteEverythingOnAHealthyDisk) {
  TempDir dir;
  const ChildResult r = stopWithin200Ms(testing::pathIn(dir, "run"), false);
  ASSERT_TRUE(WIFEXITED(r.status)) << r.err;
  EXPECT_EQ(num(r, "flushed"), 1u);
  EXPECT_LT(num(r, "flush_ms"), 100u);
  EXPECT_EQ(num(r, "stopped"), 1u);
  // Each drain adds a clock sample to the record it found: 4. When the period's drain found
  // the second record first, stop()'s drain finds none and writes the closing chunk with
  // only its clock sample: 5.
  EXPECT_GE(num(r, "records_written"), 4u);
  EXPECT_LE(num(r, "records_written"), 5u);
}

}  // namespace
}  // namespace commtrace
