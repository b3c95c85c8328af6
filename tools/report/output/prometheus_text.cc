#include "tools/report/output/prometheus_text.h"

#include <cerrno>
#include <cstring>

#include "core/nccl_vocab.h"
#include "core/prometheus_exposition.h"
#include "tools/report/format.h"
#include "tools/report/output/live_rules.h"

namespace commtrace::report {

namespace prom {

void family(std::ostream& out, const char* name, const char* type, const char* help) { out << prometheus::familyLines(name, type, help); }

std::string commLabels(std::string_view name, uint64_t id, std::string_view func) {
  return "comm=" + prometheus::quoted(name) + ",comm_id=" + prometheus::quoted(fmt::hexId(id)) + ",func=" + prometheus::quoted(func);
}

std::string commLabels(const RunModel& run, uint32_t comm, NameId func) {
  const Communicator& c = run.comms[comm];
  return commLabels(run.name(c.name), c.id, run.name(func));
}

std::string opClassLabels(const RunModel& run, const LiveTotals::OpClass& k) {
  return commLabels(run, k.comm, k.func) + ",size=" + prometheus::quoted(nccl::sizeClassName(k.size_class)) + ",algo=" + prometheus::quoted(run.name(k.algo)) +
         ",proto=" + prometheus::quoted(run.name(k.proto));
}

std::string rankLabels(const RunModel& run, int32_t process) {
  const ProcessInfo& p = run.processes[static_cast<size_t>(process)];
  return "rank=" + prometheus::quoted(std::to_string(p.rank)) + ",host=" + prometheus::quoted(p.host);
}

}  // namespace prom

void writePrometheusText(const std::vector<std::unique_ptr<LiveRule>>& rules, std::ostream& out) {
  for (const auto& rule : rules) rule->writeMetrics(out);
}

bool writePrometheusFile(const std::string& text, const std::string& dir, std::ostream& err) {
  const std::string path = dir + "/commtrace.prom";
  if (prometheus::replaceFile(path, text)) return true;
  err << "commtrace: " << path << ": cannot write the metrics file (" << std::strerror(errno) << "); no metrics file from now on (the alerts go on)\n";
  return false;
}

}  // namespace commtrace::report
