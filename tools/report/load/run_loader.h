// Reads every trace file of a run directory into a RunModel: the processes, their
// communicators, and every collective and point-to-point op joined across ranks. Files are
// streamed chunk by chunk on loader threads (never whole); one thread joins.
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "tools/report/load/op_joiner.h"
#include "tools/report/load/time_window.h"
#include "tools/report/load/run_model.h"
#include "tools/report/load/shard_window.h"

namespace commtrace::report {

struct LoadOptions {
  // Trace files, and directories read with every *.ctrace below them (nodes often write
  // into per-node subdirectories).
  std::vector<std::string> paths;
  bool progress = false;  // a one-line, \r-updated progress indicator on err
  // Which job to read when the files come from several: its id, or kAllJobs to read them
  // as one run. Empty: the files must all come from one job.
  std::string job;
  // Also hands every op to this sink the moment it is joined (op_stream.h), so that the
  // analyses fed this way never need the run's ops held whole.
  JoinedOpSink* stream = nullptr;
  // false: run.collectives, run.members and the plain sends and receives of run.transfers
  // stay empty (RunModel::ops_kept), for a caller whose analyses all take them from
  // `stream`: the run's memory then does not grow with its ops. The pieces of AlltoAll,
  // Gather and Scatter calls are kept either way (p2p_calls.h groups them per rank in issue
  // order).
  bool keep_ops = true;
  // Only the ops that started in this window (report --from/--to); see time_window.h.
  TimeWindowSpec window;
  // NVTX ranges: all of them (the export draws them), or only those that can be steps
  // (phase_keeper.h), step_range naming the step range (--step-range; empty: the default
  // rule), so that the run's memory grows with its steps and not with every range.
  bool keep_all_phases = true;
  std::function<bool(std::string_view)> step_range;
  // false: timelines' compute stays empty (its kernels counted), for a caller that reads each
  // process's kernels from its file again (the report's overlap pass): the run's memory then
  // does not grow with its kernels.
  bool keep_compute = true;
  // One shard of the run (report --shard): its ops only, cut by time (shard_window.h), but
  // every piece of an AlltoAll, Gather or Scatter call whatever its time (time_window.h): the
  // stream groups them (StreamedAnalyses::gateCallPieces). Not with a window.
  ShardSpec shard;
};

inline constexpr const char* kAllJobs = "all";

// How many threads the loader decodes files on: the cores, up to 4.
unsigned loaderThreads();

// true when at least one file could be read. Files that are not readable traces are listed
// in run.skipped_files; damaged ones are read as far as they go and marked in their
// ProcessInfo. false (nothing to analyse) with the reasons written to err: a path that
// names nothing, a directory tree without *.ctrace files, or none of them readable, or files
// of several jobs with no options.job to choose (the message lists the jobs).
bool loadRun(const LoadOptions& options, RunModel& run, std::ostream& err);

}  // namespace commtrace::report
