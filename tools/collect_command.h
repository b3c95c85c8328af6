// `commtrace collect`: the job's live collector. Spawned by global rank 0's libcommtrace.so
// on its host (it inherits the job's stderr, so its alerts land in the training log) or run
// standalone (`--listen HOST:PORT`, e.g. on a login node), it takes the processes' signed
// digests (collect_server.h) into a stream per process in memory and runs `commtrace watch`'s
// engine on them: STRAGGLER, HANG and RECOVERED lines, alerts.jsonl, the metrics file.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>

#include "tools/collect_server.h"
#include "tools/watch_command.h"

namespace commtrace::tools {

struct CollectOptions {
  WatchOptions live;        // its dir is not used: the streams come over the network
  std::string spool_dir;    // non-empty: also keep every process's stream here as a trace file
  std::string listen = "0.0.0.0:29517";
  int key_fd = -1;          // read the job's key (64 hex digits) from this descriptor; else COMMTRACE_TOKEN
  long parent_pid = 0;      // > 0: stop when this process (the rank that spawned it) is gone
  std::string metrics;      // HOST:PORT of the /metrics endpoint; empty: none
  size_t unproven_per_host = CollectServer::Options{}.max_unproven_per_address;
};

// The default port when neither --listen nor COMMTRACE_COLLECT_PORT names one.
inline constexpr uint16_t kDefaultCollectPort = 29517;

// Exit codes: 0; 1 when the port cannot be listened on, the key is missing, or the spool or
// alerts file cannot be written. Alerts go to live.alerts_path, else SPOOL/alerts.jsonl, and
// to `err` with the collector's other lines: started by rank 0, its streams are the job's,
// and stderr is where a job's log keeps diagnostics apart from what the program prints
// (`commtrace watch`, whose output the alerts are, prints them on stdout).
int runCollect(const CollectOptions& options, std::ostream& err);

}  // namespace commtrace::tools
