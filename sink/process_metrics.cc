#include "sink/process_metrics.h"

#include <cinttypes>
#include <cstdio>

#include "core/nccl_vocab.h"
#include "core/prometheus_exposition.h"

namespace commtrace {
namespace {

using prometheus::quoted;

void sample(std::string& out, const char* name, const std::string& labels, double value) {
  char number[64];
  std::snprintf(number, sizeof number, "%.17g", value);
  out += name;
  out += '{';
  out += labels;
  out += "} ";
  out += number;
  out += '\n';
}

const StringId kOther = UINT32_MAX;  // the class of everything past kMaxOpClasses

}  // namespace

void ProcessMetrics::add(const RecordSlot& slot) {
  switch (slot.kind) {
    case RecordKind::kCommInfo: {
      const CommInfoRecord& c = slot.payload.comm_info;
      comms_[c.comm_id] = {c.comm_name, c.n_ranks};
      if (rank_ < 0 && c.global_rank >= 0) rank_ = c.global_rank;
      break;
    }
    case RecordKind::kColl: {
      const CollRecord& c = slot.payload.coll;
      addOp(c.comm_id, c.func, c.bytes, c.algo, c.proto, c.gpu_start_ns, c.gpu_end_ns);
      break;
    }
    case RecordKind::kP2p: {
      const P2pRecord& p = slot.payload.p2p;
      addOp(p.comm_id, p.func, p.bytes, 0, 0, p.gpu_start_ns, p.gpu_end_ns);
      break;
    }
    case RecordKind::kInFlight: {
      const InFlightRecord& f = slot.payload.in_flight;
      if (f.in_flight == 0) in_flight_.erase(f.comm_id);
      else in_flight_[f.comm_id] = {f.func, f.cpu_start_ns};
      break;
    }
    case RecordKind::kDropSummary: {
      const DropSummaryRecord& d = slot.payload.drop_summary;
      if (d.ring_full != 0) ring_full_[{d.thread, d.dropped_kind}] = d.ring_full;
      if (d.sink_failed != 0) sink_failed_[d.dropped_kind] = d.sink_failed;
      break;
    }
    // The process's metrics are its ops, communicators, ops in flight and drops.
    case RecordKind::kKernelCh:
    case RecordKind::kProxyStep:
    case RecordKind::kApiSpan:
    case RecordKind::kKernelActivity:
    case RecordKind::kPhaseRange:
    case RecordKind::kPhasePath:
    case RecordKind::kStackFrames:
    case RecordKind::kStackSample:
    case RecordKind::kModule:
    case RecordKind::kClockSample:
      break;
  }
}

void ProcessMetrics::addOp(uint64_t comm, StringId func, uint64_t bytes, StringId algo, StringId proto, uint64_t gpu_start,
                           uint64_t gpu_end) {
  const int size_class = nccl::sizeClassOf(bytes);
  OpClass key{comm, func, size_class, algo, proto};
  if (ops_.size() >= kMaxOpClasses && !ops_.contains(key)) key = {0, kOther, 0, kOther, kOther};
  OpTotals& t = ops_[key];
  ++t.ops;
  const auto found = comms_.find(comm);
  const int n = found != comms_.end() ? found->second.n_ranks : 0;
  const std::string_view name = strings_.lookup(func);
  t.bus_bytes += static_cast<double>(nccl::ncclTestsBytes(name, bytes, n)) * nccl::busBwFactor(name, n);
  if (gpu_start != 0 && gpu_end > gpu_start) t.gpu_ns += gpu_end - gpu_start;
}

std::string ProcessMetrics::commLabels(uint64_t comm_id) const {
  char id[24];
  std::snprintf(id, sizeof id, "0x%016" PRIx64, comm_id);
  const auto found = comms_.find(comm_id);
  const std::string_view name = found != comms_.end() ? strings_.lookup(found->second.name) : std::string_view();
  return "rank=\"" + std::to_string(rank_) + "\",comm=" + quoted(name) + ",comm_id=\"" + id + '"';
}

std::string ProcessMetrics::text(uint64_t now_ns) const {
  std::string out;
  const auto name = [&](StringId id) { return id == kOther ? std::string_view("other") : strings_.lookup(id); };
  const auto opLabels = [&](const OpClass& k) {
    const auto& [comm, func, size_class, algo, proto] = k;
    return commLabels(comm) + ",func=" + quoted(name(func)) + ",size=" + quoted(nccl::sizeClassName(size_class)) +
           ",algo=" + quoted(name(algo)) + ",proto=" + quoted(name(proto));
  };
  out += prometheus::familyLines("commtrace_process_ops_total", "counter", "NCCL ops this process completed (collectives, sends, receives)");
  for (const auto& [k, t] : ops_) sample(out, "commtrace_process_ops_total", opLabels(k), static_cast<double>(t.ops));
  out += prometheus::familyLines("commtrace_process_bus_bytes_total", "counter", "nccl-tests bus bytes of those ops");
  for (const auto& [k, t] : ops_) sample(out, "commtrace_process_bus_bytes_total", opLabels(k), t.bus_bytes);
  out += prometheus::familyLines("commtrace_process_op_gpu_seconds_total", "counter",
         "their GPU time on this rank, waiting for the others included: bus bytes over it is busBw as this rank saw it");
  for (const auto& [k, t] : ops_) sample(out, "commtrace_process_op_gpu_seconds_total", opLabels(k), static_cast<double>(t.gpu_ns) / 1e9);
  out += prometheus::familyLines("commtrace_process_in_flight_seconds", "gauge",
         "how long this rank's oldest op in flight on a communicator has waited (reported from 1 s on)");
  for (const auto& [comm, f] : in_flight_) {
    const double waited = now_ns > f.cpu_start_ns ? static_cast<double>(now_ns - f.cpu_start_ns) / 1e9 : 0.0;
    sample(out, "commtrace_process_in_flight_seconds", commLabels(comm) + ",func=" + quoted(name(f.func)), waited);
  }
  uint64_t ring_full = 0, sink_failed = 0;
  for (const auto& [key, n] : ring_full_) ring_full += n;
  for (const auto& [kind, n] : sink_failed_) sink_failed += n;
  out += prometheus::familyLines("commtrace_process_dropped_records_total", "counter",
         "records lost: ring_full (the recording thread's ring was full), sink_failed (the trace file could not be written), "
         "digest (the live link to the collector could not take them)");
  const std::string rank = "rank=\"" + std::to_string(rank_) + '"';
  sample(out, "commtrace_process_dropped_records_total", rank + ",where=\"ring_full\"", static_cast<double>(ring_full));
  sample(out, "commtrace_process_dropped_records_total", rank + ",where=\"sink_failed\"", static_cast<double>(sink_failed));
  sample(out, "commtrace_process_dropped_records_total", rank + ",where=\"digest\"", static_cast<double>(digest_dropped_));
  return out;
}

bool ProcessMetrics::writeFile(const std::string& path, uint64_t now_ns) const { return prometheus::replaceFile(path, text(now_ns)); }

}  // namespace commtrace
