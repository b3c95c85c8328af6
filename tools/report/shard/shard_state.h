// A shard's state: what `commtrace report RUN --shard i/N --state F` writes, and what
// `commtrace merge F...` (or the MPI report, whose processes send theirs to rank 0) adds up
// into the report of the whole run. A state holds the run as the shard read it (processes,
// communicators, the per-process tallies of its stretch of time) and its streamed analyses,
// finished; names travel as the shard's pool (load/archived_name.h).
//
// States merge in shard order whatever order they are given in, so that the same states
// give the same report. A shard's file is checked against the others (the same run's files,
// of the same sizes, cut into the same number of shards, each shard once) before anything
// is merged.
#pragma once

#include <functional>
#include <istream>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "tools/report/build_report.h"
#include "tools/report/load/run_model.h"

namespace commtrace::report {

// Writes the state of a shard the loader read (run.window says which) with its finished
// analyses. step_range: the --step-range it was read with (the merge reports with it).
// false, with the reason on err, where the stream fails.
bool writeShardState(std::ostream& out, const RunModel& run, const StreamedAnalyses& analyses, const std::string& step_range,
                     std::ostream& err);

// A state to read: a name for messages, and how to open it (twice: once for its header, once
// to merge it, so that the states need not be held at once).
struct ShardSource {
  std::string name;
  std::function<std::unique_ptr<std::istream>()> open;
};
ShardSource shardFile(const std::string& path);
// A state held in memory (bytes must outlive the merge): read where it lies, not copied.
ShardSource shardBuffer(std::string name, const std::string& bytes);

struct MergedRun {
  RunModel run;
  StreamedAnalyses analyses;
  std::string step_range;
};

// The states of every shard of one run, merged: the run as a whole run's loader would have
// left it (ops not kept), the analyses finished. false, with the reason on err: a source
// that cannot be read or is not a state, states of different runs, a shard missing or twice.
bool mergeShardStates(const std::vector<ShardSource>& sources, MergedRun& merged, std::ostream& err);

}  // namespace commtrace::report
