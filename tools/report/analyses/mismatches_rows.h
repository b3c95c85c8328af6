// Instances some ranks issued and others did not (analyses/mismatches.h).
// Plain data: times in microseconds, bandwidths in GB/s (1e9 bytes/s, as nccl-tests prints them).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace commtrace::report {

struct MismatchRow {
  uint64_t comm = 0;
  std::string comm_name;
  std::string func;
  uint64_t seq = 0;  // NCCL's seq; p2p: the transfer's index among the sends from its sender to its receiver
  std::vector<int> missing_ranks;  // global ranks, or comm ranks when comm_ranks (printed "c<N>")
  bool comm_ranks = false;         // some global rank was unknown: missing_ranks holds comm ranks
  std::string kind;  // "missing" (others issued it), "unfinished" (started, never completed), "file ends" (the rank's trace stops earlier)
  std::string detail;  // one sentence: what is missing where (p2p: which send/receive, by transfer index): mismatchDetail()
  // What the sentence says, as the analysis found it.
  enum class Why : uint8_t { kRecordedLater, kUnfinished, kNoFile, kTraceStops };
  Why why = Why::kRecordedLater;
  uint64_t op_index = 0;                // a collective's (the members' op counter); a transfer's index
  bool transfer = false, send = false;  // a transfer's side: its send, or its receive
  int32_t src = -1, dst = -1;           // a transfer's comm ranks
  uint64_t dropped_records = 0;         // those its ranks' processes dropped before their files, where that explains it
  uint64_t left_open_utc_ns = 0;        // its file was left open, last written then (a file that ends); 0: not
};

}  // namespace commtrace::report
