// An ostream that gzips what is written to it into another ostream, as it goes: exported
// traces compress about 5x, and the Perfetto UI, trace_processor and chrome://tracing open
// gzip files as they are.
#pragma once

#include <zlib.h>

#include <ostream>
#include <streambuf>
#include <vector>

namespace commtrace::report {

class GzipStreambuf : public std::streambuf {
 public:
  // level: zlib's 1 (fastest) to 9 (smallest).
  GzipStreambuf(std::ostream& out, int level);
  ~GzipStreambuf() override;
  GzipStreambuf(const GzipStreambuf&) = delete;
  GzipStreambuf& operator=(const GzipStreambuf&) = delete;

  // Writes the gzip trailer; false when zlib or the underlying stream failed.
  bool finish();

 protected:
  int_type overflow(int_type c) override;
  int sync() override;

 private:
  bool deflateBuffered(int flush);

  std::ostream& out_;
  z_stream zs_{};
  bool ok_ = false, finished_ = false;
  std::vector<char> in_, compressed_;
};

class GzipOstream : public std::ostream {
 public:
  GzipOstream(std::ostream& sink, int level = 1) : std::ostream(nullptr), buf_(sink, level) { rdbuf(&buf_); }
  bool finish() { flush(); return buf_.finish(); }

 private:
  GzipStreambuf buf_;
};

}  // namespace commtrace::report
