// `commtrace watch RUN_DIR`: follows a run directory while its job writes it (a shared file
// system; no network) and prints live straggler and hang alerts, each also a line of
// RUN_DIR/alerts.jsonl.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

#include "tools/report/load/run_follower.h"
#include "tools/report/output/live_rules.h"

namespace commtrace::tools {

struct WatchOptions {
  std::string dir;
  double interval_s = 1.0;  // between polls of the directory
  report::LiveRuleOptions rules;
  std::string alerts_path;  // empty: RUN_DIR/alerts.jsonl (no dir: no file)
  double timeout_s = 0;     // > 0: stop after this long even if files are still open
  double gone_after_s = 60;  // a process whose file has been silent this long (no heartbeat) is gone
  std::string prom_dir;     // non-empty: DIR/commtrace.prom rewritten after every look (node-exporter's textfile collector)
};

// Waits for the directory if the job has not made it yet; then runs until every file it found
// is closed (the job ended), or the timeout. Exit codes: 0; 1 when the directory never
// appeared or cannot be read, or the alerts file cannot be written.
int runWatch(const WatchOptions& options, std::ostream& out, std::ostream& err);

// The loop under watch and collect: follows options.dir (which must exist; empty: only the
// streams feed() admits), prints and writes the alerts, rewrites the metrics file, until every
// stream is closed, the timeout, or stop(). Between looks it calls wait(interval_s) (default:
// sleeps), where the collector serves its connections.
struct LiveLoop {
  std::function<void(double seconds)> wait;
  std::function<bool()> stop;
  std::function<void(std::string metrics_text)> publish;  // the metrics after every look (the collector's /metrics)
  std::function<void(report::RunFollower&)> feed;  // before every look (the collector admits new processes' streams)
};
int followLive(const WatchOptions& options, const LiveLoop& loop, std::ostream& out, std::ostream& err);

}  // namespace commtrace::tools
