#include "tools/report/load/shard_window.h"

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "tools/report/load/own_ops.h"

namespace commtrace::report {

namespace {

const ProcessInfo* referenceProcess(const RunModel& run) {
  const ProcessInfo* best = nullptr;
  for (const ProcessInfo& p : run.processes)
    if (best == nullptr || std::make_tuple(p.rank < 0, p.rank, p.restart_count, p.path) <
                               std::make_tuple(best->rank < 0, best->rank, best->restart_count, best->path))
      best = &p;
  return best;
}

}  // namespace

bool resolveShardWindow(const ShardSpec& spec, RunModel& run, std::ostream& err) {
  if (!spec.set()) return true;
  const ProcessInfo* ref = referenceProcess(run);
  std::vector<uint64_t> starts;
  std::string error;
  if (ref != nullptr && !readOwnRecords(ref->path, {.op = [&](const OwnOp& op) {
                                                      if (op.cpu_start_ns != 0) starts.push_back(ref->utcOfCpu(op.cpu_start_ns));
                                                    }},
                                        error)) {
    err << error << '\n';
    return false;
  }
  std::sort(starts.begin(), starts.end());
  // The k-th cut at the start of the reference's op k n / N; with no op to cut at, every op
  // falls in the first shard.
  const auto cut = [&](int k) {
    if (starts.empty()) return UINT64_MAX;
    return starts[starts.size() * static_cast<size_t>(k) / static_cast<size_t>(spec.shards)];
  };
  run.window.from_utc_ns = spec.shard == 0 ? 0 : cut(spec.shard);
  run.window.to_utc_ns = spec.shard + 1 == spec.shards ? UINT64_MAX : cut(spec.shard + 1);
  run.window.shard = spec.shard;
  run.window.shards = spec.shards;
  return true;
}

}  // namespace commtrace::report
