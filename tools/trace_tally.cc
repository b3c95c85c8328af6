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

std::string TraceTally::summary() const {
  uint64_t ring_full = 0, sink_failed = 0, total = 0;
  for (const auto& [key, counts] : drops_) {
    ring_full += counts.first;
    sink_failed += counts.second;
  }
  std::string out = std::to_string(chunks_) + " chunks";
  for (const schema::Table& t : schema::allTables()) {
    const uint64_t n = per_kind_[static_cast<int>(t.kind)];
    total += n;
    if (n > 0) out += ", " + std::string(t.name) + ' ' + std::to_string(n);
  }
  out += " (" + std::to_string(total) + " records); dropped before the file: " + std::to_string(ring_full) +
         " (ring full), " + std::to_string(sink_failed) + " (write failed)";
  if (untracked_ > 0) out += "; NCCL events not followed: " + std::to_string(untracked_) + " (plugin op pool full)";
  return out;
}

}  // namespace commtrace::tools
