// Live metrics in Prometheus' text exposition format (version 0.0.4), for node-exporter's
// textfile collector (`--prom-dir`) and the collector's /metrics: collectives and busBw per
// (communicator, func, size class, algorithm, protocol), last arrivals, waiting caused and
// records dropped per rank, who is a straggler now, and how long each hung communicator has
// waited. Labels stay bounded: communicators, funcs
// and ranks, never op ids or times.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>

#include "tools/report/analyses/live_hangs.h"
#include "tools/report/analyses/live_stragglers.h"
#include "tools/report/load/run_model.h"

namespace commtrace::report {

// What the live engine knows now, for the metrics.
struct LiveView {
  const LiveStragglers& stragglers;
  const LiveHangs& hangs;
  const std::map<int32_t, uint64_t>& dropped_records;  // by process: lost before its file, so far
};

void writePrometheusText(const RunModel& run, const LiveView& live, std::ostream& out);

// Writes the text to DIR/commtrace.prom through a temporary file renamed over it, so that
// the collector never reads half a file. false, with the reason on err, when it cannot.
bool writePrometheusFile(const std::string& text, const std::string& dir, std::ostream& err);

}  // namespace commtrace::report
