// Counts what a trace file holds, chunk by chunk: chunks, records per kind, and records
// dropped before they reached the file or that a face could not follow. `commtrace dump` prints it after the records;
// `commtrace demo` prints it per file.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "core/record.h"

namespace commtrace {

struct DecodedChunk;

namespace tools {

class TraceTally {
 public:
  void add(const DecodedChunk& chunk);
  uint64_t chunks() const { return chunks_; }
  uint64_t records(RecordKind kind) const { return per_kind_[static_cast<int>(kind)]; }
  uint64_t records() const;  // all kinds
  uint64_t droppedRingFull() const;
  uint64_t droppedSinkFailed() const;
  uint64_t untracked() const { return untracked_; }
  // "2 chunks, coll 12, p2p 3 (15 records); dropped before the file: 0 (ring full), 0 (write
  // failed)", then "; NCCL events not followed: N (plugin op pool full)" when N > 0.
  std::string summary() const;

 private:
  uint64_t chunks_ = 0;
  std::array<uint64_t, kRecordKindCount> per_kind_{};
  // Drop summaries are cumulative per (thread, kind): the latest one of each counts.
  std::map<std::pair<uint32_t, uint8_t>, std::pair<uint64_t, uint64_t>> drops_;
  uint64_t untracked_ = 0;  // process-wide, cumulative: the largest report is the total
};

}  // namespace tools
}  // namespace commtrace
