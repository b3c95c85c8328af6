// What the collector says about the peers it refuses, in the job's log: the first refusal of
// a quiet spell in full (an impostor rank or a wrong token is seen at once), then at most one
// summary line a minute, however many connections a scanner or a flood makes (2,000 garbage
// connections were 1,906 lines before). Counts by kind; distinct addresses counted up to a cap.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <string_view>
#include <unordered_set>

namespace commtrace::tools {

class RefusalLog {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr Clock::duration kWindow = std::chrono::seconds(60);
  static constexpr size_t kMaxAddresses = 4096;

  // `kind`: a fixed phrase ("not a commtrace digest"); `detail`: the words of this one.
  void note(std::string_view kind, const std::string& detail, const std::string& peer, const std::string& address,
            Clock::time_point now, std::ostream& err);
  // The summary of the window, once it has ended with refusals untold.
  void tick(Clock::time_point now, std::ostream& err);
  uint64_t lines() const { return lines_; }

 private:
  void summarise(Clock::time_point now, std::ostream& err);

  bool window_open_ = false;  // a line was printed within kWindow of window_start_
  Clock::time_point window_start_{};
  std::map<std::string, uint64_t, std::less<>> untold_;  // by kind
  std::unordered_set<std::string> addresses_;
  uint64_t untold_total_ = 0;
  uint64_t lines_ = 0;
};

}  // namespace commtrace::tools
