// Where a run is cut into shards (report --shard i/N): at the starts of the reference
// process's ops (the lowest global rank's first life), so that each shard holds about as
// many ops whatever the run's pace, and every shard, reading the same file, cuts the same.
// A shard is a time window (run_model.h, TimeWindow::shard): the root-cause walk passes
// waits back along each rank's ops in order, which a cut by time keeps within a shard.
#pragma once

#include <ostream>

#include "tools/report/load/run_model.h"

namespace commtrace::report {

struct ShardSpec {
  int shard = 0, shards = 1;  // shard of shards, from 0
  bool set() const { return shards > 1; }
};

// Sets run.window to the shard's (run.processes as the loader admitted them). false, with
// the reason on err, where the reference process's file cannot be read.
bool resolveShardWindow(const ShardSpec& spec, RunModel& run, std::ostream& err);

}  // namespace commtrace::report
