// Live metrics in Prometheus' text exposition format (version 0.0.4), for node-exporter's
// textfile collector (`commtrace watch --prom-dir`): collectives and busBw per
// (communicator, func), last arrivals and waiting caused per rank, who is a straggler now,
// and how long each hung communicator has waited. Labels stay bounded: communicators, funcs
// and ranks, never op ids or times.
#pragma once

#include <ostream>
#include <string>

#include "tools/report/analyses/live_hangs.h"
#include "tools/report/analyses/live_stragglers.h"
#include "tools/report/run_model.h"

namespace commtrace::report {

void writePrometheusText(const RunModel& run, const LiveStragglers& live, const LiveHangs& hangs, std::ostream& out);

// Writes it to DIR/commtrace.prom through a temporary file renamed over it, so that the
// collector never reads half a file. false, with the reason on err, when it cannot.
bool writePrometheusFile(const RunModel& run, const LiveStragglers& live, const LiveHangs& hangs, const std::string& dir,
                         std::ostream& err);

}  // namespace commtrace::report
