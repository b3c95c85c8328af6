// loadRun and alignClocks against runs the NCCL driver plays through libcommtrace.so, held
// against the driver's ground-truth.json: every planted collective is one instance with
// every member seated, every send meets its receive, node clock offsets come back, and
// a deleted or truncated rank file is reported while the rest is analysed.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "tests/support/driver_run.h"
#include "tests/support/temp_dir.h"
#include "tools/report/load/clock_align.h"
#include "tools/report/load/run_loader.h"

using namespace commtrace;
using namespace commtrace::report;
using nlohmann::json;

namespace {

constexpr const char* kDemo = DEMO_SCENARIO_PATH;

// 4 ranks on 2 nodes: a graph-captured AllReduce (its replays keep one seqNumber), comms
// recreated half way, AlltoAll pieces and sends across nodes.
constexpr const char* kGraphScenario = R"({
  "name": "graph-recreate", "seed": 3, "nodes": 2, "ranks_per_node": 2, "steps": 6,
  "gpu_clock": {"base_ns": 1790000000000000000, "tick_ns": 1024, "node_offsets_ns": [0, 1500000], "node_drift_ppm": [0, 0]},
  "recreate_comms_at_steps": [3],
  "communicators": [{"name": "world", "groups": "world"}, {"name": "node", "groups": [[0, 1], [2, 3]]}],
  "step": [
    {"compute_ms": 0.5},
    {"op": "AllReduce", "comm": "world", "count": 65536, "datatype": "ncclFloat32", "graph_captured": true},
    {"op": "AllReduce", "comm": "world", "count": 65536, "datatype": "ncclFloat32", "graph_captured": true},
    {"op": "AllGather", "comm": "node", "count": 4096, "datatype": "ncclBfloat16"},
    {"op": "AlltoAll", "comm": "world", "count": 1024, "datatype": "ncclBfloat16"},
    {"op": "Send", "comm": "world", "pairs": [[0, 2], [3, 1]], "count": 8192, "datatype": "ncclFloat32"}
  ]
})";

struct DriverRun {
  testutil::TempDir tmp;
  std::string dir;
  json truth;
};

std::unique_ptr<DriverRun> playScenario(const std::string& scenario, bool paced = false) {
  auto run = std::make_unique<DriverRun>();
  run->dir = run->tmp.path() + "/run";
  run->truth = testutil::playDriver(scenario, run->dir, {.paced = paced});
  return run;
}

RunModel load(const std::string& dir) {
  RunModel run;
  std::ostringstream err;
  EXPECT_TRUE(loadRun({{dir}, false}, run, err)) << err.str();
  EXPECT_EQ(err.str(), "");
  return run;
}

int processOfRank(const RunModel& run, int rank) {
  for (size_t p = 0; p < run.processes.size(); ++p) {
    if (run.processes[p].rank == rank) return static_cast<int>(p);
  }
  return -1;
}

std::string fileOfRank(const std::string& dir, int rank) {
  const RunModel run = load(dir);
  return run.processes[static_cast<size_t>(processOfRank(run, rank))].path;
}

// The run's instances and transfers keyed the way the ground truth names them.
struct Index {
  std::map<std::pair<uint64_t, uint64_t>, const CollInstance*> colls;  // (comm id, op_index)
  std::map<std::tuple<uint64_t, int, int, uint64_t>, const P2pTransfer*> p2ps;  // (comm id, src, dst, op_index)
  explicit Index(const RunModel& run) {
    for (const CollInstance& c : run.collectives) colls[{run.comms[c.comm].id, c.op_index}] = &c;
    for (const P2pTransfer& t : run.transfers) p2ps[{run.comms[t.comm].id, t.send.comm_rank, t.recv.comm_rank, t.op_index}] = &t;
  }
};

// Every planted collective is one instance whose seats hold the planted members, except
// the seats of `absent_rank`, which must be empty.
void expectCollectivesJoined(const RunModel& run, const json& truth, int absent_rank = -1) {
  const Index index(run);
  EXPECT_EQ(run.collectives.size(), truth["collectives"].size());
  for (const json& c : truth["collectives"]) {
    const json& first = c["members"][0];
    const auto it = index.colls.find({c["comm_id"].get<uint64_t>(), first["op_index"].get<uint64_t>()});
    ASSERT_NE(it, index.colls.end()) << c.dump();
    const CollInstance& inst = *it->second;
    EXPECT_EQ(run.name(inst.func), c["func"].get<std::string>());
    EXPECT_EQ(inst.n_members, c["members"].size());
    for (const json& m : c["members"]) {
      const MemberView& v = run.membersOf(inst)[m["comm_rank"].get<int>()];
      const int rank = m["rank"].get<int>();
      if (rank == absent_rank) {
        EXPECT_EQ(v.process, -1);
        continue;
      }
      EXPECT_EQ(v.process, processOfRank(run, rank)) << c.dump();
      EXPECT_EQ(v.gpu_end_ns, m["gpu_stop_ns"].get<uint64_t>());
    }
  }
}

void expectTransfersJoined(const RunModel& run, const json& truth, int absent_rank = -1) {
  const Index index(run);
  EXPECT_EQ(run.transfers.size(), truth["p2p"].size());
  for (const json& p : truth["p2p"]) {
    const json &send = p["send"], &recv = p["recv"];
    ASSERT_EQ(send["op_index"], recv["op_index"]);
    const auto it = index.p2ps.find({p["comm_id"].get<uint64_t>(), send["comm_rank"].get<int>(),
                                     recv["comm_rank"].get<int>(), send["op_index"].get<uint64_t>()});
    ASSERT_NE(it, index.p2ps.end()) << p.dump();
    const P2pTransfer& t = *it->second;
    EXPECT_EQ(run.name(t.func), p["api_func"].get<std::string>());
    EXPECT_EQ(t.bytes, p["bytes"].get<uint64_t>());
    for (const auto& [side, view] : {std::pair{&send, &t.send}, std::pair{&recv, &t.recv}}) {
      const int rank = (*side)["rank"].get<int>();
      EXPECT_EQ(view->process, rank == absent_rank ? -1 : processOfRank(run, rank)) << p.dump();
    }
  }
}

TEST(RunLoaderDriver, DemoRunJoinsEveryPlantedOpAndAlignsItsNodes) {
  const auto demo = playScenario(kDemo);
  const RunModel run = load(demo->dir);
  EXPECT_EQ(run.processes.size(), demo->truth["ranks"].get<size_t>());
  EXPECT_EQ(run.comms.size(), demo->truth["comms"].size());
  EXPECT_TRUE(run.missing_ranks.empty());
  expectCollectivesJoined(run, demo->truth);
  expectTransfersJoined(run, demo->truth);

  // Node 1's GPU clock: +3,217,411 ns and 6.5 ppm fast; the fit names them from completions.
  const ClockAlignment clocks = alignClocks(run);
  const double offset_ns = demo->truth["planted"]["clock_offsets_ns"][1].get<double>();
  const double drift_ppm = demo->truth["planted"]["clock_drift_ppm"][1].get<double>();
  for (const ClockFit& f : clocks.summary.fits) {
    ASSERT_TRUE(f.aligned) << f.rank;
    const bool node1 = f.rank >= 4;
    // The offset at the run's start: the drift adds at most a few ns in its first ms.
    EXPECT_NEAR(f.offset_us, node1 ? offset_ns / 1e3 : 0.0, 3.0) << f.rank;
    if (f.rank != 0) {
      EXPECT_TRUE(f.drift_fitted) << f.rank;
      EXPECT_NEAR(f.drift_ppm, node1 ? drift_ppm : 0.0, 1.0) << f.rank;
      EXPECT_GE(f.anchors, 20u);
    }
  }
  EXPECT_GT(clocks.summary.residual_us_max, 0.0) << "the 1024 ns tick leaves a residual";
  EXPECT_LT(clocks.summary.residual_us_max, 3.0);
}

TEST(RunLoaderDriver, ADeletedRankFileIsMissingAndTheRestJoined) {
  const auto demo = playScenario(kDemo);
  std::filesystem::remove(fileOfRank(demo->dir, 5));
  const RunModel run = load(demo->dir);
  EXPECT_EQ(run.processes.size(), 7u);
  EXPECT_EQ(run.world_size, 8);
  EXPECT_EQ(run.missing_ranks, (std::vector<int>{5}));
  expectCollectivesJoined(run, demo->truth, 5);
  expectTransfersJoined(run, demo->truth, 5);
  for (const ClockFit& f : alignClocks(run).summary.fits) EXPECT_TRUE(f.aligned) << f.rank;
}

// Cut at 60 %: its closing chunk is gone, so the file reads as open (a process killed mid-run
// leaves this), read up to the cut, not as damaged.
TEST(RunLoaderDriver, ATruncatedRankFileReadsAsOpenUpToTheCut) {
  const auto demo = playScenario(kDemo, true);
  const std::string path = fileOfRank(demo->dir, 2);
  std::filesystem::resize_file(path, std::filesystem::file_size(path) * 6 / 10);
  const RunModel run = load(demo->dir);
  const ProcessInfo& info = run.processes[static_cast<size_t>(processOfRank(run, 2))];
  EXPECT_EQ(info.file_state, ProcessInfo::FileState::kOpen);
  EXPECT_FALSE(info.damaged);
  EXPECT_TRUE(info.issues.empty()) << info.issues.front();
  EXPECT_EQ(run.processes[static_cast<size_t>(processOfRank(run, 1))].file_state, ProcessInfo::FileState::kClosed);
  EXPECT_GT(info.records, 0u);
  EXPECT_TRUE(run.missing_ranks.empty());
  EXPECT_EQ(run.collectives.size(), demo->truth["collectives"].size()) << "the other ranks still name every op";
  uint64_t seated = 0, expected = 0;
  for (const json& c : demo->truth["collectives"]) {
    for (const json& m : c["members"]) expected += m["rank"] == 2;
  }
  for (const CollInstance& c : run.collectives) {
    for (uint32_t m = 0; m < c.n_members; ++m) seated += run.membersOf(c)[m].process == processOfRank(run, 2);
  }
  EXPECT_GT(seated, 0u);
  EXPECT_LT(seated, expected);
}

TEST(RunLoaderDriver, GraphReplaysRecreatedCommsAndAlltoAllJoin) {
  testutil::TempDir scenario_dir;
  const std::string scenario = scenario_dir.path() + "/graph.json";
  std::ofstream(scenario) << kGraphScenario;
  const auto played = playScenario(scenario);
  const RunModel run = load(played->dir);
  EXPECT_EQ(run.comms.size(), played->truth["comms"].size()) << "each generation its own communicator";
  size_t graph_instances = 0;
  for (const CollInstance& c : run.collectives) graph_instances += c.graph_captured;
  EXPECT_EQ(graph_instances, 2u * 6u * 1u) << "two captured AllReduces per step on one world comm";
  expectCollectivesJoined(run, played->truth);
  expectTransfersJoined(run, played->truth);
}

}  // namespace
