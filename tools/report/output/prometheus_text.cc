#include "tools/report/output/prometheus_text.h"

#include <cerrno>
#include <cstring>

#include "core/nccl_vocab.h"
#include "core/prometheus_exposition.h"
#include "tools/report/format.h"

namespace commtrace::report {
namespace {

using prometheus::quoted;

void family(std::ostream& out, const char* name, const char* type, const char* help) { out << prometheus::familyLines(name, type, help); }

std::string commLabels(std::string_view name, uint64_t id, std::string_view func) {
  return "comm=" + quoted(name) + ",comm_id=" + quoted(fmt::hexId(id)) + ",func=" + quoted(func);
}

std::string commLabels(const RunModel& run, uint32_t comm, NameId func) {
  const Communicator& c = run.comms[comm];
  return commLabels(run.name(c.name), c.id, run.name(func));
}

std::string opClassLabels(const RunModel& run, const LiveTotals::OpClass& k) {
  return commLabels(run, k.comm, k.func) + ",size=" + quoted(nccl::sizeClassName(k.size_class)) + ",algo=" + quoted(run.name(k.algo)) +
         ",proto=" + quoted(run.name(k.proto));
}

std::string rankLabels(const RunModel& run, int32_t process) {
  const ProcessInfo& p = run.processes[static_cast<size_t>(process)];
  return "rank=" + quoted(std::to_string(p.rank)) + ",host=" + quoted(p.host);
}

}  // namespace

void writePrometheusText(const RunModel& run, const LiveView& view, std::ostream& out) {
  const LiveStragglers& live = view.stragglers;
  const LiveTotals& t = live.totals();
  family(out, "commtrace_collectives_total", "counter",
         "Collective instances joined, per communicator, func, size class (bytes per rank), algorithm and protocol.");
  for (const auto& [key, f] : t.by_op_class) out << "commtrace_collectives_total{" << opClassLabels(run, key) << "} " << f.instances << '\n';
  family(out, "commtrace_busbw_gbps", "gauge",
         "nccl-tests bus bandwidth so far: the timed instances' bus bytes over their transfer times, GB/s.");
  for (const auto& [key, f] : t.by_op_class)
    if (f.transfer_ns != 0)
      out << "commtrace_busbw_gbps{" << opClassLabels(run, key) << "} " << f.bus_bytes / static_cast<double>(f.transfer_ns) << '\n';
  family(out, "commtrace_last_arrivals_total", "counter", "Collective instances the rank arrived last at (a tie shared).");
  for (const auto& [process, r] : t.by_process) out << "commtrace_last_arrivals_total{" << rankLabels(run, process) << "} " << r.last_arrivals << '\n';
  family(out, "commtrace_wait_caused_seconds_total", "counter", "The other members' waiting the rank's own delays caused (root-cause attribution: waits passed on count for the rank that created the delay).");
  for (const auto& [process, r] : t.by_process)
    out << "commtrace_wait_caused_seconds_total{" << rankLabels(run, process) << "} " << static_cast<double>(r.wait_caused_ns) / 1e9 << '\n';
  const auto straggling = live.straggling();
  family(out, "commtrace_straggler", "gauge", "1 while the rank is judged a straggler on the communicator (series only for those).");
  for (const auto& [seat, a] : straggling)
    if (a.process >= 0) out << "commtrace_straggler{" << rankLabels(run, a.process) << "," << commLabels(run, a.comm, a.func) << "} 1\n";
  family(out, "commtrace_straggler_score", "gauge", "The share of the other members' time a straggler cost them in its latest straggling window.");
  for (const auto& [seat, a] : straggling)
    if (a.process >= 0) out << "commtrace_straggler_score{" << rankLabels(run, a.process) << "," << commLabels(run, a.comm, a.func) << "} " << a.effect << '\n';
  family(out, "commtrace_dropped_records_total", "counter",
         "The rank's records lost before its trace file (its rings full, or its file unwritable), so far.");
  for (const auto& [process, dropped] : view.dropped_records)
    out << "commtrace_dropped_records_total{" << rankLabels(run, process) << "} " << dropped << '\n';
  family(out, "commtrace_hang_seconds", "gauge",
         "How long the communicator's members have waited in an op some member has not joined (series only while it hangs).");
  for (const HangAlert& h : view.hangs.hanging()) {
    out << "commtrace_hang_seconds{" << commLabels(run.name(h.comm_name), h.comm_id, run.name(h.op.func)) << "} " << h.waited_s << '\n';
  }
}

bool writePrometheusFile(const std::string& text, const std::string& dir, std::ostream& err) {
  const std::string path = dir + "/commtrace.prom";
  if (prometheus::replaceFile(path, text)) return true;
  err << "commtrace: " << path << ": cannot write the metrics file (" << std::strerror(errno) << "); no metrics file from now on (the alerts go on)\n";
  return false;
}

}  // namespace commtrace::report
