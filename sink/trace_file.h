// One process's trace file: created exclusively under the run directory, written only
// with whole-frame write(2) appends, so the file is valid up to its last complete frame.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <span>
#include <string>

#include "core/process_identity.h"
#include "sink/wire.h"

namespace commtrace {

struct FileHeaderFields {
  ProcessIdentity identity;  // who wrote the file
  std::string host;
  int64_t pid = 0;
  uint64_t start_realtime_ns = 0;
  uint64_t start_monotonic_ns = 0;
  std::string program;
  uint32_t ring_records = 0;
  uint32_t flush_period_ms = 0;
  bool marks_closing = true;  // FileHeader.marks_closing: false only to write files as writers before 0.1 did (tests)
  bool exit_unseen = false;   // FileHeader.exit_unseen
};

// The FileHeader message bytes.
wire::Bytes encodeFileHeader(const FileHeaderFields& h);

class TraceFile {
 public:
  // How bytes reach the file: write(2), or a test's stand-in for a disk that fails or hangs.
  using WriteFn = ssize_t (*)(int fd, const void* bytes, size_t size);

  explicit TraceFile(WriteFn write_fn = &::write) : write_(write_fn) {}
  TraceFile(const TraceFile&) = delete;
  TraceFile& operator=(const TraceFile&) = delete;
  ~TraceFile();

  // Creates the run directory (and missing parents) if missing and a new file in it named
  // <host>-pid<pid>-<start>[-n].ctrace (O_CREAT|O_EXCL|O_NOFOLLOW, mode 0640).
  // On failure returns false and sets error to a complete "commtrace: ..." line.
  bool create(const std::string& dir, const FileHeaderFields& header, std::string& error);

  // Appends bytes with write(2), retrying short writes and EINTR. false and errno-based
  // error text on failure (ENOSPC, EFBIG past RLIMIT_FSIZE, ...).
  bool append(std::span<const uint8_t> bytes, std::string& error);

  // Closes and removes the file created: a process that records nothing after all leaves no
  // file (its header alone would read as a process killed at its start).
  void discard();

  const std::string& path() const { return path_; }
  bool isOpen() const { return fd_ >= 0; }

 private:
  WriteFn write_;
  int fd_ = -1;
  std::string path_;
};

}  // namespace commtrace
