// A report's JSON without the root-cause walk's figures: what a report merged from shards
// (commtrace merge, commtrace-mpi) must hold exactly as the whole run's does. The fields are
// those SCHEMA.md lists under "Reports merged from shards"; the straggler tables' rows are put
// in the order of their identity, as the walk's figures order them.
#pragma once

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace commtrace::testutil {

inline void withoutFields(nlohmann::json& rows, const std::vector<std::string>& fields, const char* identity) {
  for (nlohmann::json& row : rows)
    for (const std::string& f : fields) row.erase(f);
  if (identity != nullptr)
    std::sort(rows.begin(), rows.end(), [&](const nlohmann::json& a, const nlohmann::json& b) { return a.at(identity) < b.at(identity); });
}

inline nlohmann::json withoutWalkFigures(const std::string& report) {
  nlohmann::json r = nlohmann::json::parse(report);
  withoutFields(r["stragglers"],
                {"wait_caused_us", "late_fraction", "mean_lateness_us", "class", "confidence", "evidence", "z", "stretch_z",
                 "median_wait_caused_us", "gap_ops", "gap_us_p50", "peer_gap_us_p50", "gap_excess_us_p50", "late_lateness_us_p50",
                 "compute_share", "enqueue_fraction", "delay_fraction", "step_saved_share", "chance_fraction"},
                "rank");
  withoutFields(r["straggler_hosts"], {"wait_caused_us", "late_fraction", "z", "confidence", "step_saved_share"}, "host");
  withoutFields(r["straggler_comms"], {"worst_rank", "wait_caused_us"}, "comm");
  withoutFields(r["finding_details"],
                {"finding", "cost_us", "cost_per_step_us", "cost_share", "step_saved_us", "step_saved_share", "confidence"}, nullptr);
  r["findings"] = r["findings"].size();
  r["run"].erase("shards");  // 1 for the whole run, N merged: the tests check it apart
  r.erase("advice");  // its words quote the walk's figures; its rows follow the findings compared above
  return r;
}

// run.shards: how many shards' states the report was merged from.
inline int shardsOf(const std::string& report) { return nlohmann::json::parse(report)["run"]["shards"].get<int>(); }

// The ranks the report flags as stragglers, ascending.
inline std::vector<int> flaggedStragglers(const std::string& report) {
  std::vector<int> ranks;
  const nlohmann::json r = nlohmann::json::parse(report);
  for (const nlohmann::json& row : r["stragglers"])
    if (row["flagged"].get<bool>()) ranks.push_back(row["rank"].get<int>());
  std::sort(ranks.begin(), ranks.end());
  return ranks;
}

}  // namespace commtrace::testutil
