// summarizeRun and communicatorRows over a run built in memory.
#include "tools/report/load/run_summary.h"

#include <gtest/gtest.h>

#include "tools/report/format.h"

using namespace commtrace::report;

namespace {

RunModel twoHostRun() {
  RunModel run;
  run.dir = "/runs/job7";
  const struct { int rank; const char* host; uint32_t restart; uint64_t dropped; bool damaged; } processes[] = {
      {0, "a", 0, 0, false}, {1, "a", 0, 5, true}, {2, "b", 0, 0, false}, {2, "b", 1, 1, false}};
  for (const auto& p : processes) {
    ProcessInfo& info = run.processes.emplace_back();
    info.rank = p.rank;
    info.host = p.host;
    info.restart_count = p.restart;
    info.dropped_records = p.dropped;
    info.untracked_events = p.dropped * 2;
    info.damaged = p.damaged;
    if (p.damaged) info.issues.push_back("commtrace: r1.ctrace: offset 9: CRC mismatch");
  }
  run.skipped_files.push_back("commtrace: x.ctrace is not a commtrace trace");
  run.missing_ranks = {3};
  Communicator& world = run.comms.emplace_back();
  world.id = 0xABC;
  world.name = run.names.intern("world");
  world.size = 4;
  world.global_ranks = {0, 1, 2, -1};
  world.processes = {0, 1, 2, -1};
  Communicator& pair = run.comms.emplace_back();
  pair.id = 0xDEF;
  pair.size = 2;
  pair.global_ranks = {0, 1};
  pair.processes = {0, 1};
  for (uint32_t comm : {0u, 0u, 1u}) run.collectives.push_back({.comm = comm});
  run.transfers.emplace_back();
  return run;
}

TEST(RunSummary, CountsFilesRanksHostsOpsAndProblems) {
  const RunSummary s = summarizeRun(twoHostRun());
  EXPECT_EQ(s.dir, "/runs/job7");
  EXPECT_EQ(s.ranks, 3);
  EXPECT_EQ(s.processes, 4);
  EXPECT_EQ(s.hosts, 2);
  EXPECT_EQ(s.communicators, 2);
  EXPECT_EQ(s.collective_instances, 3u);
  EXPECT_EQ(s.p2p_transfers, 1u);
  EXPECT_EQ(s.ops, 4u);
  EXPECT_EQ(s.dropped_records, 6u);
  EXPECT_EQ(s.untracked_events, 12u);
  EXPECT_EQ(s.files, 5);
  EXPECT_EQ(s.damaged_files, 1);
  EXPECT_EQ(s.problems, (std::vector<std::string>{"commtrace: x.ctrace is not a commtrace trace",
                                                  "commtrace: r1.ctrace: offset 9: CRC mismatch"}));
  EXPECT_EQ(s.missing_ranks, (std::vector<int>{3}));
}

TEST(RunSummary, CommunicatorRowsNameRanksHostsAndInstances) {
  const std::vector<CommunicatorRow> rows = communicatorRows(twoHostRun());
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].id, 0xABCu);
  EXPECT_EQ(rows[0].name, "world");
  EXPECT_EQ(rows[0].size, 4);
  EXPECT_EQ(rows[0].ranks, (std::vector<int>{0, 1, 2, -1}));
  EXPECT_EQ(rows[0].hosts, 2);
  EXPECT_EQ(rows[0].instances, 2u);
  EXPECT_EQ(rows[1].name, "");
  EXPECT_EQ(rows[1].hosts, 1);
  EXPECT_EQ(rows[1].instances, 1u);
}

// Files left open by processes whose rank is unknown (forked children, plugin-only) are
// counted, not printed as a row of question marks.
TEST(RunSummary, ProcessesOfNamesRanksAndCountsTheUnknown) {
  EXPECT_EQ(fmt::processesOf({3, 7}), "rank(s) 3,7");
  EXPECT_EQ(fmt::processesOf({-1, -1}), "2 processes of no known rank");
  EXPECT_EQ(fmt::processesOf({-1, 2, 3, 4}), "rank(s) 2-4 and 1 process of no known rank");
}

}  // namespace
