#include "tools/refusal_log.h"

namespace commtrace::tools {

void RefusalLog::note(std::string_view kind, const std::string& detail, const std::string& peer, const std::string& address,
                      Clock::time_point now, std::ostream& err) {
  tick(now, err);
  if (!window_open_) {
    err << "commtrace: collector: refused " << peer << ": " << detail << "\n" << std::flush;
    ++lines_;
    window_open_ = true;
    window_start_ = now;
    return;
  }
  auto [it, fresh] = untold_.try_emplace(std::string(kind), 0);
  ++it->second;
  ++untold_total_;
  if (addresses_.size() < kMaxAddresses) addresses_.insert(address);
}

void RefusalLog::tick(Clock::time_point now, std::ostream& err) {
  if (!window_open_ || now - window_start_ < kWindow) return;
  if (untold_total_ == 0) {
    window_open_ = false;  // a quiet minute: the next refusal is told in full
    return;
  }
  summarise(now, err);
}

void RefusalLog::summarise(Clock::time_point now, std::ostream& err) {
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(now - window_start_).count();
  err << "commtrace: collector: refused " << untold_total_ << " more connection" << (untold_total_ == 1 ? "" : "s") << " in the last "
      << seconds << " s, from " << addresses_.size() << (addresses_.size() == kMaxAddresses ? " or more" : "") << " address"
      << (addresses_.size() == 1 ? "" : "es") << ":";
  const char* separator = " ";
  for (const auto& [kind, count] : untold_) {
    err << separator << count << " " << kind;
    separator = ", ";
  }
  err << "\n" << std::flush;
  ++lines_;
  window_start_ = now;
  untold_.clear();
  addresses_.clear();
  untold_total_ = 0;
}

}  // namespace commtrace::tools
