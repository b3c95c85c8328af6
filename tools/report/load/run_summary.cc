#include "tools/report/load/run_summary.h"

#include <algorithm>
#include <set>
#include <string>

namespace commtrace::report {

namespace {

std::vector<uint64_t> instancesPerComm(const RunModel& run) {
  std::vector<uint64_t> instances(run.comms.size(), 0);
  for (const CollInstance& c : run.collectives) ++instances[c.comm];
  return instances;
}

}  // namespace

RunSummary summarizeRun(const RunModel& run) { return summarizeRun(run, instancesPerComm(run), run.transfers.size()); }

std::vector<CommunicatorRow> communicatorRows(const RunModel& run) { return communicatorRows(run, instancesPerComm(run)); }

RunSummary summarizeRun(const RunModel& run, std::span<const uint64_t> instances, uint64_t transfers) {
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
    if (run.beingWritten(p)) {
      ++s.files_being_written;
    } else if (p.file_state == ProcessInfo::FileState::kOpen) {
      ++s.files_left_open;
      s.files_left_open_exit_unseen += p.exit_unseen;
      s.files_cut_short += p.modifiedAfterItsWriter();
      s.ranks_left_open.push_back(p.rank);
      s.left_open_last_written_utc_ns =
          std::max(s.left_open_last_written_utc_ns, p.modifiedAfterItsWriter() ? p.writtenUtc() : p.modified_utc_ns);
    }
    if (p.last_op_utc_ns != 0) {
      s.first_op_utc_ns = s.first_op_utc_ns == 0 ? p.first_op_utc_ns : std::min(s.first_op_utc_ns, p.first_op_utc_ns);
      s.last_op_utc_ns = std::max(s.last_op_utc_ns, p.last_op_utc_ns);
      s.all_files_reach_utc_ns =
          s.all_files_reach_utc_ns == 0 ? p.last_op_utc_ns : std::min(s.all_files_reach_utc_ns, p.last_op_utc_ns);
    }
    s.problems.insert(s.problems.end(), p.issues.begin(), p.issues.end());
  }
  s.problems.insert(s.problems.begin(), run.skipped_files.begin(), run.skipped_files.end());
  std::sort(s.ranks_left_open.begin(), s.ranks_left_open.end());
  s.read_utc_ns = run.read_utc_ns;
  s.jobs.assign(jobs.begin(), jobs.end());
  s.ranks = static_cast<int>(ranks.size());
  s.processes = static_cast<int>(run.processes.size());
  s.hosts = static_cast<int>(hosts.size());
  s.communicators = static_cast<int>(run.comms.size());
  for (uint64_t n : instances) s.collective_instances += n;
  s.p2p_transfers = transfers;
  s.ops = s.collective_instances + s.p2p_transfers;
  s.files = static_cast<int>(run.processes.size() + run.skipped_files.size());
  s.missing_ranks = run.missing_ranks;
  s.shards = run.shards;
  if (run.window.set()) {
    s.windowed = true;
    s.window_from_utc_ns = run.window.from_utc_ns;
    s.window_to_utc_ns = run.window.to_utc_ns;
    s.ops_outside_window = run.ops_outside_window;
    s.window_from_step = run.window.from_step;
    s.window_to_step = run.window.to_step;
    s.window_step_rank = run.window.step_rank;
    s.window_step_period = run.window.step_period;
    s.window_step_range = run.window.step_range;
  }
  return s;
}

std::vector<CommunicatorRow> communicatorRows(const RunModel& run, std::span<const uint64_t> instances) {
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
    row.instances = rows.size() <= instances.size() ? instances[rows.size() - 1] : 0;
  }
  return rows;
}

}  // namespace commtrace::report
