#include "tools/report/load/progress_line.h"

#include <algorithm>
#include <cstdio>
#include <utility>

namespace commtrace::report {
namespace {

constexpr auto kRedrawEvery = std::chrono::milliseconds(100);

// Both sizes in the unit of the total, so that they read alike: "1.2 of 3.4 GB".
std::string sizes(uint64_t done, uint64_t total) {
  const auto [unit, name] = total >= 1'000'000'000 ? std::pair{1e9, "GB"}
                            : total >= 1'000'000   ? std::pair{1e6, "MB"}
                                                   : std::pair{1e3, "kB"};
  char text[64];
  std::snprintf(text, sizeof text, "%.1f of %.1f %s", static_cast<double>(done) / unit, static_cast<double>(total) / unit,
                name);
  return text;
}

}  // namespace

void ProgressLine::update(int file, uint64_t bytes_done) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && now - last_ < kRedrawEvery) return;
  last_ = now;
  draw(file, bytes_done);
}

void ProgressLine::done() {
  if (!enabled_) return;
  draw(files_, total_bytes_);
  out_ << '\n' << std::flush;
}

void ProgressLine::draw(int file, uint64_t bytes_done) {
  const std::string line = "commtrace: " + what_ + " " + std::to_string(files_) + (files_ == 1 ? " file" : " files") + ", " +
                           std::to_string(std::min(file, files_)) + " done (" +
                           sizes(std::min(bytes_done, total_bytes_), total_bytes_) + ")";
  out_ << '\r' << line << std::string(width_ > line.size() ? width_ - line.size() : 0, ' ') << std::flush;
  width_ = line.size();
  drawn_ = true;
}

}  // namespace commtrace::report
