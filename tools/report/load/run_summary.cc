#include "tools/report/load/run_summary.h"

#include <set>
#include <string>

namespace commtrace::report {

RunSummary summarizeRun(const RunModel& run) {
  RunSummary s;
  s.dir = run.dir;
  std::set<int> ranks;
  std::set<std::string> hosts, jobs;
  for (const ProcessInfo& p : run.processes) {
    jobs.insert(p.job_id);
    if (p.rank >= 0) ranks.insert(p.rank);
    if (!p.host.empty()) hosts.insert(p.host);
    s.dropped_records += p.dropped_records;
    s.untracked_events += p.untracked_events;
    if (p.damaged) ++s.damaged_files;
    s.problems.insert(s.problems.end(), p.issues.begin(), p.issues.end());
  }
  s.problems.insert(s.problems.begin(), run.skipped_files.begin(), run.skipped_files.end());
  s.jobs.assign(jobs.begin(), jobs.end());
  s.ranks = static_cast<int>(ranks.size());
  s.processes = static_cast<int>(run.processes.size());
  s.hosts = static_cast<int>(hosts.size());
  s.communicators = static_cast<int>(run.comms.size());
  s.collective_instances = run.collectives.size();
  s.p2p_transfers = run.transfers.size();
  s.ops = s.collective_instances + s.p2p_transfers;
  s.files = static_cast<int>(run.processes.size() + run.skipped_files.size());
  s.missing_ranks = run.missing_ranks;
  return s;
}

std::vector<CommunicatorRow> communicatorRows(const RunModel& run) {
  std::vector<CommunicatorRow> rows;
  rows.reserve(run.comms.size());
  for (const Communicator& c : run.comms) {
    CommunicatorRow& row = rows.emplace_back();
    row.id = c.id;
    row.name = std::string(run.name(c.name));
    row.size = c.size;
    row.ranks = c.global_ranks;
    std::set<std::string> hosts;
    for (int p : c.processes) {
      if (p >= 0 && !run.processes[static_cast<size_t>(p)].host.empty()) hosts.insert(run.processes[static_cast<size_t>(p)].host);
    }
    row.hosts = static_cast<int>(hosts.size());
  }
  for (const CollInstance& inst : run.collectives) ++rows[inst.comm].instances;
  return rows;
}

}  // namespace commtrace::report
