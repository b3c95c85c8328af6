// The advice's rows (advice_words.h writes them).
// Plain data: times in microseconds, bandwidths in GB/s (1e9 bytes/s, as nccl-tests prints them).
#pragma once

#include <cstdint>
#include <string>

namespace commtrace::report {

// What to try, and the measured numbers behind it (advice_words.h).
struct AdviceRow {
  std::string kind;      // "nccl_algo", "bucket_size", "overlap", "drain_host", "check_link", "straggler_compute", "straggler_host"
  std::string subject;   // what it is about: a communicator, a host, a link, a rank
  std::string advice;    // what to try
  std::string evidence;  // why: the numbers
};

}  // namespace commtrace::report
