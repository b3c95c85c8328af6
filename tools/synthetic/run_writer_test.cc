// The synthetic run writer (tools/synthetic/run_writer.h) read back by the report's loader:
// every planted instance and transfer is joined whole, the model matches what the writer
// says it wrote, and the nodes' clock offsets come back from the completions.
#include "tools/synthetic/run_writer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "tests/support/temp_dir.h"
#include "tools/report/load/clock_align.h"
#include "tools/report/load/run_loader.h"

using namespace commtrace;
using namespace commtrace::report;

namespace {

TEST(RunWriter, TheLoaderJoinsEveryPlantedOp) {
  testutil::TempDir dir;
  synthetic::SyntheticRunOptions options;
  options.dir = dir.path() + "/run";
  options.ranks = 16;
  options.ranks_per_node = 4;
  options.collectives_per_rank = 2000;
  synthetic::SyntheticRunTruth truth;
  std::string error;
  ASSERT_TRUE(synthetic::writeSyntheticRun(options, truth, error)) << error;
  EXPECT_EQ(truth.files, 16u);
  EXPECT_EQ(truth.coll_records, 16u * 2000u);
  EXPECT_EQ(truth.communicators, 1 + 4 + 4);

  RunModel run;
  std::ostringstream err;
  ASSERT_TRUE(loadRun({{options.dir}, false}, run, err)) << err.str();
  EXPECT_EQ(run.processes.size(), 16u);
  EXPECT_EQ(run.comms.size(), static_cast<size_t>(truth.communicators));
  EXPECT_EQ(run.collectives.size(), truth.coll_instances);
  uint64_t seated = 0;
  for (const CollInstance& c : run.collectives) {
    for (uint32_t m = 0; m < c.n_members; ++m) seated += run.membersOf(c)[m].process >= 0;
  }
  EXPECT_EQ(seated, truth.coll_records) << "every record in its instance, no seat empty";
  EXPECT_EQ(run.members.size(), truth.coll_records);
  EXPECT_EQ(run.transfers.size(), truth.p2p_transfers);
  for (const P2pTransfer& t : run.transfers) {
    EXPECT_GE(t.send.process, 0);
    EXPECT_GE(t.recv.process, 0);
  }
  EXPECT_TRUE(run.missing_ranks.empty());
  for (const ProcessInfo& p : run.processes) EXPECT_FALSE(p.damaged) << p.path;

  // Node n's clock is n x 1,234,567 ns ahead of node 0's (and drifts by up to 2.5 ppm).
  const ClockAlignment clocks = alignClocks(run);
  for (const ClockFit& f : clocks.summary.fits) {
    ASSERT_TRUE(f.aligned) << f.rank;
    EXPECT_NEAR(f.offset_us, 1234.567 * (f.rank / 4), 2.0) << f.rank;
  }
}

}  // namespace

namespace {

// The DDP shape: one world communicator, every op an AllReduce on it, no sends.
// One op per slot at any size: no op of a rank starts before its previous one ended. With a
// fixed per-rank count, 480 data-parallel copies' AllGather took 10 ms of a 2 ms slot, every
// op overlapped the next (a GPU gap of 0 for every rank) and the planted straggler's longer
// gaps vanished: the report named nobody past ~3,700 ranks.
TEST(RunWriter, NoOpOfARankOverlapsItsNextHoweverManyNodes) {
  testutil::TempDir dir;
  synthetic::SyntheticRunOptions options;
  options.dir = dir.path() + "/run";
  options.ranks = 960;
  options.ranks_per_node = 2;  // data-parallel communicators of 480
  options.collectives_per_rank = 10;
  synthetic::SyntheticRunTruth truth;
  std::string error;
  ASSERT_TRUE(synthetic::writeSyntheticRun(options, truth, error)) << error;
  RunModel run;
  std::ostringstream err;
  ASSERT_TRUE(loadRun({{options.dir}, false}, run, err)) << err.str();
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> spans(run.processes.size());
  for (const CollInstance& c : run.collectives)
    for (uint32_t i = 0; i < c.n_members; ++i)
      if (const MemberView& m = run.membersOf(c)[i]; m.process >= 0) spans[static_cast<size_t>(m.process)].emplace_back(m.gpu_start_ns, m.gpu_end_ns);
  size_t checked = 0;
  for (auto& ops : spans) {
    std::sort(ops.begin(), ops.end());
    for (size_t i = 1; i < ops.size(); ++i, ++checked) ASSERT_GT(ops[i].first, ops[i - 1].second) << "op " << i << " starts before op " << i - 1 << " ends";
  }
  EXPECT_EQ(checked, 960u * 9u);
}

TEST(RunWriter, TheDdpShapeIsOneWorldCommunicatorOfAllReduces) {
  testutil::TempDir dir;
  synthetic::SyntheticRunOptions options;
  options.dir = dir.path() + "/run";
  options.shape = synthetic::JobShape::kDdp;
  options.ranks = 16;
  options.ranks_per_node = 4;
  options.collectives_per_rank = 1000;
  synthetic::SyntheticRunTruth truth;
  std::string error;
  ASSERT_TRUE(synthetic::writeSyntheticRun(options, truth, error)) << error;
  EXPECT_EQ(truth.communicators, 1);
  EXPECT_EQ(truth.coll_instances, 1000u);
  EXPECT_EQ(truth.p2p_records, 0u);

  RunModel run;
  std::ostringstream err;
  ASSERT_TRUE(loadRun({{options.dir}, false}, run, err)) << err.str();
  ASSERT_EQ(run.comms.size(), 1u);
  EXPECT_EQ(run.comms[0].size, 16);
  EXPECT_EQ(run.collectives.size(), 1000u);
  for (const CollInstance& c : run.collectives) {
    EXPECT_EQ(run.names[c.func], "AllReduce");
    EXPECT_EQ(c.bytes, 6'553'600u * 2);
  }
  EXPECT_TRUE(run.transfers.empty());
}

}  // namespace
