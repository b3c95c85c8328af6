#include "tools/report/analyses/call_paths.h"

#include <algorithm>
#include <map>
#include <set>
#include <string_view>

#include "tools/report/load/phase_keeper.h"
#include "tools/report/load/phase_path_tally.h"

namespace commtrace::report {

namespace {

struct PathTotals {
  CallPathRow row;
  std::set<int> ranks;
  bool exposure_unknown = false;  // a process issued under it without its exposure known
};

uint64_t exposedOf(const std::vector<PathExposure>& exposure, NameId path) {
  for (const PathExposure& e : exposure)
    if (e.path == path) return e.exposed_ns;
  return 0;
}

}  // namespace

std::vector<CallPathRow> commByCallPath(const RunModel& run, const std::vector<std::vector<PathExposure>>& exposed_by_path,
                                        const std::unordered_map<NameId, PathWaiting>& waiting_by_path) {
  std::map<std::string_view, PathTotals> by_path;
  double all_us = 0;
  for (size_t p = 0; p < run.timelines.size() && p < run.processes.size(); ++p) {
    for (const PathComm& c : run.timelines[p].comm_by_path) {
      PathTotals& t = by_path[run.name(c.path)];
      t.row.ops += c.ops;
      t.row.bytes += c.bytes;
      t.row.comm_us += static_cast<double>(c.gpu_ns) / 1e3;
      if (c.call_pieces > 0) t.row.waited_known = false;
      t.ranks.insert(run.processes[p].rank);
      const bool known = p < exposed_by_path.size() && !exposed_by_path[p].empty();
      if (!known) t.exposure_unknown = true;
      else t.row.exposed_us += static_cast<double>(exposedOf(exposed_by_path[p], c.path)) / 1e3;
      all_us += static_cast<double>(c.gpu_ns) / 1e3;
    }
  }
  for (const auto& [path, w] : waiting_by_path)
    if (const auto row = by_path.find(path == 0 ? PhasePathTally::kNoPath : run.name(path)); row != by_path.end()) {
      row->second.row.waited_us += w.waited_ns / 1e3;
      row->second.row.wait_caused_us += w.wait_caused_ns / 1e3;
    }
  std::vector<CallPathRow> rows;
  for (auto& [path, t] : by_path) {
    t.row.path = path;
    t.row.ranks = static_cast<int>(t.ranks.size());
    t.row.comm_share = all_us > 0 ? t.row.comm_us / all_us : 0;
    t.row.exposure_known = !t.exposure_unknown;
    if (!t.row.exposure_known) t.row.exposed_us = 0;
    if (!t.row.waited_known) t.row.waited_us = 0;
    t.row.exposed_share = t.row.exposure_known && t.row.comm_us > 0 ? t.row.exposed_us / t.row.comm_us : 0;
    rows.push_back(std::move(t.row));
  }
  std::sort(rows.begin(), rows.end(), [](const CallPathRow& a, const CallPathRow& b) {
    return a.comm_us != b.comm_us ? a.comm_us > b.comm_us : a.path < b.path;
  });
  return rows;
}

ExposedPath mostExposedPath(const std::vector<CallPathRow>& rows) {
  if (!everyExposureKnown(rows)) return {};
  std::map<std::string, CallPathRow> folded;
  double all_exposed_us = 0;
  for (const CallPathRow& row : rows) {
    CallPathRow& f = folded[foldDigits(row.path)];
    f.ops += row.ops;
    f.bytes += row.bytes;
    f.comm_us += row.comm_us;
    f.exposed_us += row.exposed_us;
    f.waited_known = f.waited_known && row.waited_known;
    f.waited_us += row.waited_us;
    f.wait_caused_us += row.wait_caused_us;
    all_exposed_us += row.exposed_us;
  }
  ExposedPath most;
  for (auto& [path, row] : folded)
    if (row.exposed_us > most.row.exposed_us) {
      most.row = row;
      most.row.path = path;
    }
  if (most.row.path.empty()) return {};
  most.row.exposure_known = true;
  if (!most.row.waited_known) most.row.waited_us = 0;
  most.row.exposed_share = most.row.comm_us > 0 ? most.row.exposed_us / most.row.comm_us : 0;
  most.exposed_of_all = most.row.exposed_us / all_exposed_us;
  return most;
}

bool everyExposureKnown(const std::vector<CallPathRow>& rows) {
  return std::all_of(rows.begin(), rows.end(), [](const CallPathRow& r) { return r.exposure_known; });
}

}  // namespace commtrace::report
