// What a live run left, read after the job (watch_cli_test, collect_cli_test): its
// alerts.jsonl, and when a planted scenario's trouble began, which an alert's latency is
// measured from.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tools/report/analyses/lateness.h"
#include "tools/report/load/run_loader.h"

namespace commtrace::testutil {

// Every alert of an alerts.jsonl, one JSON object per line.
inline std::vector<nlohmann::json> alertsOf(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

// live_straggler.json: the UTC time of the first AllReduce rank 1 arrived at more than 1.5 ms after rank 0 (the
// planted 2.5 ms longer compute begins), from the files after the run; or `rank`, more than min_lateness_ns after
// the first member.
inline uint64_t onsetUtc(const std::string& run_dir, int rank = 1, uint64_t min_lateness_ns = 1'500'000) {
  report::RunModel run;
  std::ostringstream err;
  EXPECT_TRUE(report::loadRun({.paths = {run_dir}}, run, err)) << err.str();
  report::InstanceArrivals arrivals;
  uint64_t onset = UINT64_MAX;
  for (const report::CollInstance& c : run.collectives) {
    if (!report::arrivalsOf(run, c, arrivals)) continue;
    for (const report::MemberArrival& a : arrivals.members) {
      if (a.rank != rank || a.lateness_ns < min_lateness_ns) continue;
      const report::MemberView& m = run.membersOf(c)[a.comm_rank];
      onset = std::min(onset, run.processes[static_cast<size_t>(m.process)].utcOfCpu(m.cpu_start_ns));
    }
  }
  return onset;
}

// live_hang.json: when the others began waiting in the AllReduce #seq rank 2 was late to (its first member's
// start, UTC), from the files after the run.
inline uint64_t firstArrivalUtc(const std::string& run_dir, uint64_t seq) {
  report::RunModel run;
  std::ostringstream err;
  EXPECT_TRUE(report::loadRun({.paths = {run_dir}}, run, err)) << err.str();
  uint64_t first = UINT64_MAX;
  for (const report::CollInstance& c : run.collectives) {
    if (c.seq != seq || run.name(c.func) != "AllReduce") continue;
    const report::MemberView* members = run.membersOf(c);
    for (int32_t k = 0; k < run.comms[c.comm].size; ++k) {
      const report::MemberView& m = members[k];
      if (m.process >= 0) first = std::min(first, run.processes[static_cast<size_t>(m.process)].utcOfCpu(m.cpu_start_ns));
    }
  }
  return first;
}

}  // namespace commtrace::testutil
