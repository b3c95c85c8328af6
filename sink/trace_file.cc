#include "sink/trace_file.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "core/run_directory.h"
#include "sink/frame.h"
#include "sink/schema.h"

namespace commtrace {

wire::Bytes encodeFileHeader(const FileHeaderFields& h) {
  wire::Bytes out;
  wire::putVarintField(out, 1, schema::kFormatVersion);
  wire::putStringField(out, 2, h.host);
  wire::putVarintField(out, 3, static_cast<uint64_t>(h.pid));
  wire::putVarintField(out, 4, wire::zigzag(static_cast<uint64_t>(static_cast<int64_t>(h.identity.rank))));
  wire::putVarintField(out, 5, wire::zigzag(static_cast<uint64_t>(static_cast<int64_t>(h.identity.local_rank))));
  wire::putVarintField(out, 6, wire::zigzag(static_cast<uint64_t>(static_cast<int64_t>(h.identity.world_size))));
  wire::putStringField(out, 7, h.identity.job_id);
  wire::putVarintField(out, 8, h.identity.restart_count);
  wire::putVarintField(out, 9, h.start_realtime_ns);
  wire::putVarintField(out, 10, h.start_monotonic_ns);
  wire::putStringField(out, 11, "CLOCK_MONOTONIC");
  wire::putStringField(out, 12, h.program);
  wire::putStringField(out, 13, COMMTRACE_VERSION);
  wire::putVarintField(out, 14, h.ring_records);
  wire::putVarintField(out, 15, h.flush_period_ms);
  wire::putStringField(out, 16, h.identity.nccl_host_id);
  if (h.marks_closing) wire::putVarintField(out, 17, 1);
  if (h.exit_unseen) wire::putVarintField(out, 18, 1);
  return out;
}

TraceFile::~TraceFile() {
  if (fd_ >= 0) close(fd_);
}

void TraceFile::discard() {
  if (fd_ < 0) return;
  close(fd_);
  fd_ = -1;
  unlink(path_.c_str());
}

namespace {

// Creates dir and any missing parent (commtrace-run/<job id> on a fresh machine). Every
// process of a job may race here: a level another one made first is no error.
bool makeRunDirectory(const std::string& dir, std::string& error) {
  for (size_t end = dir.find('/', 1); ; end = dir.find('/', end + 1)) {
    const std::string level = dir.substr(0, end);
    if (mkdir(level.c_str(), 0750) != 0 && errno != EEXIST) {
      error = "commtrace: cannot create run directory " + level + ": " + strerror(errno);
      return false;
    }
    if (end == std::string::npos) return true;
  }
}

}  // namespace

bool TraceFile::create(const std::string& dir, const FileHeaderFields& header, std::string& error) {
  if (!makeRunDirectory(dir, error)) return false;
  // The host name as the system gives it may hold a '/' (and "..": a way out of dir).
  const std::string stem = dir + "/" + pathComponentOf(header.host, "unknown-host") + "-pid" + std::to_string(header.pid) + "-" +
                           std::to_string(header.start_realtime_ns);
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string path = stem + (attempt == 0 ? "" : "-" + std::to_string(attempt)) + ".ctrace";
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_APPEND | O_CLOEXEC, 0640);
    if (fd >= 0) {
      fd_ = fd;
      path_ = std::move(path);
      wire::Bytes bytes;
      frame::append(bytes, frame::Type::kFileHeader, 0, encodeFileHeader(header));
      if (append(bytes, error)) return true;
      // A file without its header is no trace: leave none behind, and write nothing more.
      unlink(path_.c_str());
      close(fd_);
      fd_ = -1;
      path_.clear();
      return false;
    }
    if (errno != EEXIST) {
      error = "commtrace: cannot create trace file " + path + ": " + strerror(errno);
      return false;
    }
  }
  error = "commtrace: no free trace file name for " + stem;
  return false;
}

bool TraceFile::append(std::span<const uint8_t> bytes, std::string& error) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write_(fd_, bytes.data() + done, bytes.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      error = "commtrace: writing " + path_ + " failed: " + (n < 0 ? strerror(errno) : "no progress");
      return false;
    }
  }
  return true;
}

}  // namespace commtrace
