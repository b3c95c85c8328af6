// Live metrics in Prometheus' text exposition format (version 0.0.4), for node-exporter's
// textfile collector (`--prom-dir`) and the collector's /metrics: each live rule writes its
// families (live_rules.h): collectives and busBw per (communicator, func, size class,
// algorithm, protocol), last arrivals, waiting caused and records dropped per rank, who is
// a straggler now, and how long each hung communicator has waited. Labels stay bounded:
// communicators, funcs and ranks, never op ids or times.
#pragma once

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "tools/report/analyses/live_stragglers.h"
#include "tools/report/load/run_model.h"

namespace commtrace::report {

class LiveRule;

void writePrometheusText(const std::vector<std::unique_ptr<LiveRule>>& rules, std::ostream& out);

// Writes the text to DIR/commtrace.prom through a temporary file renamed over it, so that
// the collector never reads half a file. false, with the reason on err, when it cannot.
bool writePrometheusFile(const std::string& text, const std::string& dir, std::ostream& err);

// What the rules' series are written with.
namespace prom {
void family(std::ostream& out, const char* name, const char* type, const char* help);
std::string commLabels(std::string_view name, uint64_t id, std::string_view func);
std::string commLabels(const RunModel& run, uint32_t comm, NameId func);
std::string opClassLabels(const RunModel& run, const LiveTotals::OpClass& k);
std::string rankLabels(const RunModel& run, int32_t process);
}  // namespace prom

}  // namespace commtrace::report
