#include "tools/trace_tally.h"

#include <algorithm>

#include "sink/reader.h"
#include "sink/schema.h"

namespace commtrace::tools {

void TraceTally::add(const DecodedChunk& chunk) {
  ++chunks_;
  for (const RecordSlot& slot : chunk.records) {
    ++per_kind_[static_cast<int>(slot.kind)];
    if (slot.kind == RecordKind::kDropSummary) {
      const DropSummaryRecord& d = slot.payload.drop_summary;
      auto& latest = drops_[{d.thread, d.dropped_kind}];
      latest = {std::max(latest.first, d.ring_full), std::max(latest.second, d.sink_failed)};
      untracked_ = std::max(untracked_, d.untracked);
    }
  }
}

uint64_t TraceTally::records() const {
  uint64_t total = 0;
  for (uint64_t n : per_kind_) total += n;
  return total;
}

uint64_t TraceTally::droppedRingFull() const {
  uint64_t total = 0;
  for (const auto& [key, counts] : drops_) total += counts.first;
  return total;
}

uint64_t TraceTally::droppedSinkFailed() const {
  uint64_t total = 0;
  for (const auto& [key, counts] : drops_) total += counts.second;
  return total;
}

std::string TraceTally::summary() const {
  std::string out = std::to_string(chunks_) + " chunks";
  for (const schema::Table& t : schema::allTables()) {
    const uint64_t n = per_kind_[static_cast<int>(t.kind)];
    if (n > 0) out += ", " + std::string(t.name) + ' ' + std::to_string(n);
  }
  out += " (" + std::to_string(records()) + " records); dropped before the file: " + std::to_string(droppedRingFull()) +
         " (ring full), " + std::to_string(droppedSinkFailed()) + " (write failed)";
  if (untracked_ > 0) out += "; NCCL events not followed: " + std::to_string(untracked_) + " (plugin op pool full)";
  return out;
}

}  // namespace commtrace::tools
