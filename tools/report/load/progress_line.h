// "commtrace: reading 64 files, 12 done (1.2 of 3.4 GB)" (the files are read together), redrawn in place with \r at most ten
// times a second, and ended with a newline. Silent when disabled (stderr not a terminal).
// `what` names the pass: "reading", or "overlap: re-reading" for the report's second pass.
// One thread at a time calls it.
#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>
#include <utility>

namespace commtrace::report {

class ProgressLine {
 public:
  ProgressLine(std::ostream& out, bool enabled, int files, uint64_t total_bytes, std::string what = "reading")
      : out_(out), enabled_(enabled), files_(files), total_bytes_(total_bytes), what_(std::move(what)) {}

  void update(int files_done, uint64_t bytes_done);
  void done();

 private:
  void draw(int file, uint64_t bytes_done);

  std::ostream& out_;
  const bool enabled_;
  const int files_;
  const uint64_t total_bytes_;
  const std::string what_;
  std::chrono::steady_clock::time_point last_{};
  size_t width_ = 0;  // of the line drawn last: a shorter one pads over it
  bool drawn_ = false;
};

}  // namespace commtrace::report
