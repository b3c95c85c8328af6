#include "tools/report/analyses/rank_index.h"

#include <algorithm>

namespace commtrace::report {

int globalRankOf(const Communicator& comm, int comm_rank) {
  const auto member = static_cast<size_t>(comm_rank);
  return comm_rank >= 0 && member < comm.global_ranks.size() ? comm.global_ranks[member] : -1;
}

int rankSlots(const RunModel& run) {
  int slots = run.world_size;
  for (const ProcessInfo& p : run.processes) slots = std::max(slots, p.rank + 1);
  for (const Communicator& comm : run.comms)
    for (int g : comm.global_ranks) slots = std::max(slots, g + 1);
  return slots;
}

std::vector<std::string> hostsByRank(const RunModel& run) {
  std::vector<std::string> hosts(rankSlots(run));
  for (const ProcessInfo& p : run.processes)
    if (p.rank >= 0 && !p.host.empty()) hosts[p.rank] = p.host;
  return hosts;
}

}  // namespace commtrace::report
