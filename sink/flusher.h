// The background thread that drains every thread's ring into chunks and appends them to
// this process's trace file. It wakes on its period or when a ring passes half full
// (Doorbell). All file I/O happens on this thread, which blocks every signal: a disk-full
// or RLIMIT_FSIZE error becomes a warning, never a signal to the host program.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

#include "core/record.h"
#include "sink/digest_sender.h"
#include "sink/trace_file.h"

namespace commtrace {

struct FlusherOptions {
  std::string dir = "commtrace-run";
  uint32_t flush_period_ms = 200;  // also the most a SIGKILL can lose
  // A chunk (its clock sample alone, if nothing else) is written at least this often, so
  // that a reader following the file tells a live process from a dead or frozen one.
  uint32_t heartbeat_ms = 1000;
  uint32_t chunk_records = 16384;  // a chunk is cut when it reaches this many records
  ProcessIdentity identity;
  TraceFile::WriteFn write = &::write;  // tests put a failing or hanging disk here
  // A face's slow work, done on this thread and never on a caller's: called before every
  // drain (last: the final one, at stop), with the trace file's path ("" until it exists).
  // The CUPTI face hands CUPTI's buffers over here.
  void (*before_drain)(bool last, const std::string& trace_path) = nullptr;
  // A second clock read with the CPU's into every ClockSample (CUPTI's); 0: none now.
  uint64_t (*cupti_clock)() = nullptr;
  // The live link, when this process sends digests to the job's collector: every
  // digest_period_ms, a chunk of the live kinds drained since (isLiveKind), self-contained
  // (its own string table) so that one dropped costs only itself. Owned by the caller.
  DigestSender* digest = nullptr;
  uint32_t digest_period_ms = 1000;
  // Non-empty: this process's own metrics rewritten every prom_period_ms as
  // prom_dir/commtrace-pid<PID>.prom for node-exporter's textfile collector (process_metrics.h).
  std::string prom_dir;
  uint32_t prom_period_ms = 5000;
  bool exit_unseen = false;  // FileHeader.exit_unseen: _exit bypasses this process's recorder
};

// What the collector's analyses read (schema::Table::live).
bool isLiveKind(RecordKind kind);

struct FlusherStats {
  uint64_t records_written = 0;
  uint64_t chunks_written = 0;
  uint64_t bytes_written = 0;
  std::array<uint64_t, kRecordKindCount> sink_failed{};  // drained but not written, per kind
  uint64_t digest_records_dropped = 0;  // live records whose digest the link could not take
  uint64_t sinkFailedTotal() const;
};

class Flusher {
 public:
  explicit Flusher(FlusherOptions options);
  ~Flusher();  // stops if running, without a time limit
  Flusher(const Flusher&) = delete;
  Flusher& operator=(const Flusher&) = delete;

  // Opens the trace file and starts the thread. Only one Flusher runs per process; a second
  // start() returns false. A file that cannot be created is not a failure: the warning
  // goes to stderr once and the flusher drains and counts records as sink_failed.
  bool start();
  // Wakes the thread, has it drain everything and write the last chunk, and joins it,
  // waiting at most timeout_ms. false when time ran out: the thread goes on (detached) and
  // this object must then never be destroyed.
  bool stop(uint32_t timeout_ms = kNoTimeout);
  static constexpr uint32_t kNoTimeout = UINT32_MAX;

  // In a forked child, where the running flusher's thread does not exist: lets this
  // process start a flusher of its own. The parent's Flusher object must be left alone
  // (neither stopped nor destroyed: there is no thread to join).
  static void forgetAfterFork();

  FlusherStats stats() const;
  const std::string& path() const { return file_.path(); }

 private:
  struct Worker;
  void run();
  void drainUntilStopped();

  FlusherOptions options_;
  FileHeaderFields header_;  // the file's, kept to create it later when it could not be at the start
  TraceFile file_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> running_{false};
  std::atomic<uint32_t> finished_{0};  // the thread's last write is done (a futex word)
  struct AtomicStats {
    std::atomic<uint64_t> records_written{0}, chunks_written{0}, bytes_written{0};
    std::array<std::atomic<uint64_t>, kRecordKindCount> sink_failed{};
    std::atomic<uint64_t> digest_records_dropped{0};
  } stats_;
  wire::Bytes header_frame_;  // the trace's FileHeader frame: a digest connection starts with it
};

}  // namespace commtrace
