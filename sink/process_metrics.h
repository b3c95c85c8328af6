// One process's own live metrics for node-exporter's textfile collector on its host
// (COMMTRACE_PROM_DIR): the flusher hands it every record it drains and, every few seconds,
// has it rewrite DIR/commtrace-pid<PID>.prom (a temporary file renamed over it, so the
// collector never reads half a file); the file goes when the process stops recording. What
// a process knows alone: its collectives and the bus bytes and GPU time of each (busBw as this
// rank saw it, its waiting included), its transfers, how long its oldest op in flight has
// been waiting per communicator, and what it dropped (ring full, file write failed, live
// digests the link could not take). The job-wide view (stragglers, busBw per transfer) is the
// collector's /metrics. Label sets stay bounded: at most kMaxOpClasses
// (comm, func, size class, algo, proto) classes, the rest counted under func="other".
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>

#include "core/record.h"
#include "core/string_table.h"

namespace commtrace {

class ProcessMetrics {
 public:
  static constexpr size_t kMaxOpClasses = 256;

  ProcessMetrics(const StringTable& strings, int32_t rank) : strings_(strings), rank_(rank) {}

  void add(const RecordSlot& slot);
  // Dropped records not in the records themselves (the flusher's counts).
  void setDigestDropped(uint64_t n) { digest_dropped_ = n; }
  // The exposition text, ops in flight measured against now_ns (CLOCK_MONOTONIC, as records).
  std::string text(uint64_t now_ns) const;
  // Writes text() to `path` through `path`.tmp; false with errno set when it cannot.
  bool writeFile(const std::string& path, uint64_t now_ns) const;

 private:
  struct Comm {
    StringId name = 0;
    int32_t n_ranks = 0;
  };
  using OpClass = std::tuple<uint64_t, StringId, int, StringId, StringId>;  // comm, func, size class, algo, proto
  struct OpTotals {
    uint64_t ops = 0;
    double bus_bytes = 0;
    uint64_t gpu_ns = 0;
  };
  struct InFlight {
    StringId func = 0;
    uint64_t cpu_start_ns = 0;
  };
  void addOp(uint64_t comm, StringId func, uint64_t bytes, StringId algo, StringId proto, uint64_t gpu_start, uint64_t gpu_end);
  std::string commLabels(uint64_t comm_id) const;

  const StringTable& strings_;
  int32_t rank_;
  std::map<uint64_t, Comm> comms_;
  std::map<OpClass, OpTotals> ops_;
  std::map<uint64_t, InFlight> in_flight_;      // by communicator: its oldest op in flight now
  std::map<std::pair<uint32_t, uint8_t>, uint64_t> ring_full_;  // cumulative, per (thread, kind)
  std::map<uint8_t, uint64_t> sink_failed_;    // cumulative, per kind
  uint64_t digest_dropped_ = 0;
};

}  // namespace commtrace
