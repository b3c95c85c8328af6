// libcommtrace.so as NCCL's profiler plugin, end to end: the NCCL driver plays the demo job
// (8 ranks, 2 nodes, one process per rank) against the built library, binding each ABI
// version in turn, loaded as the plugin only or preloaded, each rank returning from main or
// ending with _exit right after its last finalize; every op the driver planted must be in
// the rank's trace file with the func, sizes, algorithm, protocol, sequence number and GPU
// times of the ground truth, with nothing dropped.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "sink/reader.h"
#include "tools/nccl-driver/job.h"
#include "tests/support/temp_dir.h"

using namespace commtrace;
using nlohmann::json;

namespace {

constexpr const char* kDriver = NCCL_DRIVER_PATH;
constexpr const char* kPlugin = COMMTRACE_SO_PATH;
constexpr const char* kScenario = DEMO_SCENARIO_PATH;

// One rank's records, keyed the way the report will merge them.
struct RankTrace {
  std::map<std::tuple<uint64_t, uint64_t>, CollRecord> colls;  // (comm, op_index)
  std::map<std::tuple<uint64_t, std::string, int, uint64_t>, P2pRecord> p2ps;  // (comm, func, peer, op_index)
  std::map<StringId, std::string> strings;
  uint64_t dropped = 0;
  size_t comm_infos = 0;
  bool closed = false;  // its last chunk marked closing
  std::string str(StringId id) const { return id == 0 ? "" : strings.at(id); }
};

RankTrace readRankFile(const std::string& path, int& rank) {
  RankTrace trace;
  TraceReader reader;
  std::string error;
  EXPECT_TRUE(reader.open(path, error)) << error;
  rank = reader.header().rank();
  DecodedChunk chunk;
  auto keep = [&](StringId id) { trace.strings.emplace(id, std::string(reader.str(id))); };
  while (reader.next(chunk)) {
    for (const RecordSlot& s : chunk.records) {
      if (s.kind == RecordKind::kColl) {
        const CollRecord& c = s.payload.coll;
        for (StringId id : {c.func, c.datatype, c.algo, c.proto}) keep(id);
        EXPECT_TRUE(trace.colls.emplace(std::make_tuple(c.comm_id, c.op_index), c).second) << "duplicate coll";
      } else if (s.kind == RecordKind::kP2p) {
        const P2pRecord& p = s.payload.p2p;
        for (StringId id : {p.func, p.datatype, p.parent_func}) keep(id);
        const auto key = std::make_tuple(p.comm_id, std::string(reader.str(p.func)), p.peer, p.op_index);
        EXPECT_TRUE(trace.p2ps.emplace(key, p).second) << "duplicate p2p";
      } else if (s.kind == RecordKind::kDropSummary) {
        const DropSummaryRecord& d = s.payload.drop_summary;
        trace.dropped += d.ring_full + d.sink_failed + d.untracked;
      } else if (s.kind == RecordKind::kCommInfo) {
        ++trace.comm_infos;
      }
    }
  }
  EXPECT_TRUE(reader.issues().empty()) << path;
  trace.closed = reader.state() == TraceReader::State::kClosed;
  return trace;
}

// NCCL names ncclUint8 "Unknown" in its descriptors (2.28 quirk): the plugin keeps the name
// and records the bytes as unknown (0), except where NCCL's own byte count carries them
// (AllGather/Broadcast Coll events count bytes).
std::string datatypeAsNcclNames(const std::string& user_datatype) {
  return user_datatype == "ncclUint8" ? "Unknown" : user_datatype;
}
uint64_t bytesAsRecorded(const json& op, bool nccl_counts_bytes) {
  return op["datatype"] == "ncclUint8" && !nccl_counts_bytes ? 0 : op["bytes"].get<uint64_t>();
}

enum class Loading { kPluginOnly, kPreloaded };
enum class Ending { kReturn, kQuickExit };
using E2EParam = std::tuple<int, Loading, Ending>;

class DriverPluginE2E : public ::testing::TestWithParam<E2EParam> {};

TEST_P(DriverPluginE2E, EveryPlantedOpIsInTheFiles) {
  const auto [version, loading, ending] = GetParam();
  testutil::TempDir dir;
  // The default flush period (200 ms) outlasts the unpaced run: with _exit, every record
  // in the files got there through finalize (plugin only) or the _exit wrapper (preloaded).
  const std::string command = std::string(kDriver) + " --scenario " + kScenario + " --plugin " + kPlugin +
                              (loading == Loading::kPreloaded ? " --preload" : "") +
                              (ending == Ending::kQuickExit ? " --exit _exit" : "") + " --out " + dir.path() +
                              " --profiler-version " + std::to_string(version) + " > " + dir.path() +
                              "/driver.log 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;

  std::ifstream truth_file(dir.path() + "/ground-truth.json");
  const json truth = json::parse(truth_file);
  std::map<int, RankTrace> ranks;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    if (entry.path().extension() != ".ctrace") continue;
    int rank = -1;
    RankTrace trace = readRankFile(entry.path().string(), rank);
    ASSERT_GE(rank, 0) << "the file header names the launcher's RANK";
    ranks.emplace(rank, std::move(trace));
  }
  ASSERT_EQ(ranks.size(), truth["ranks"].get<size_t>());
  for (const auto& [rank, trace] : ranks) {
    EXPECT_EQ(trace.dropped, 0u) << "rank " << rank;
    EXPECT_GT(trace.comm_infos, 0u);
    // Closed however the rank ended: at exit, by the _exit wrapper, or (plugin only, then
    // _exit) by the flush after its last communicator's finalize; else a report would call
    // it killed.
    EXPECT_TRUE(trace.closed) << "rank " << rank;
  }

  const bool api_events = version >= 5;  // v4: no CollApi/P2pApi, NCCL's rewritten counts
  size_t colls_checked = 0;
  for (const json& c : truth["collectives"]) {
    for (const json& m : c["members"]) {
      const RankTrace& trace = ranks.at(m["rank"].get<int>());
      const auto it = trace.colls.find({c["comm_id"].get<uint64_t>(), m["op_index"].get<uint64_t>()});
      ASSERT_NE(it, trace.colls.end()) << "rank " << m["rank"] << " lacks " << c.dump();
      const CollRecord& r = it->second;
      const std::string func = c["func"];
      EXPECT_EQ(trace.str(r.func), func);
      EXPECT_EQ(r.seq, c["seq"].get<uint64_t>());
      EXPECT_EQ(r.bytes, bytesAsRecorded(c, func == "AllGather" || func == "Broadcast")) << func;
      EXPECT_EQ(trace.str(r.algo), c["algo"].get<std::string>());
      EXPECT_EQ(trace.str(r.proto), c["proto"].get<std::string>());
      EXPECT_EQ(r.n_channels, c["n_channels"].get<int>());
      EXPECT_EQ(r.gpu_start_ns, m["gpu_start_ns"].get<uint64_t>());
      EXPECT_EQ(r.gpu_end_ns, m["gpu_stop_ns"].get<uint64_t>());
      EXPECT_EQ(r.phase_path, 0u) << "the driver opens no NVTX range";
      EXPECT_LE(r.cpu_start_ns, r.cpu_end_ns);
      if (api_events || (func != "AllGather" && func != "Broadcast")) {
        EXPECT_EQ(r.count, c["count"].get<uint64_t>()) << func << " v" << version;
        EXPECT_EQ(trace.str(r.datatype), datatypeAsNcclNames(c["datatype"]));
      } else {
        EXPECT_EQ(trace.str(r.datatype), "ncclInt8") << "v4 sees NCCL's byte-count rewrite";
      }
      ++colls_checked;
    }
  }
  size_t p2ps_checked = 0;
  for (const json& p : truth["p2p"]) {
    const std::string api_func = p["api_func"];
    for (const char* side : {"send", "recv"}) {
      const json& m = p[side];
      const json& other = p[std::string(side) == "send" ? "recv" : "send"];
      const std::string func = std::string(side) == "send" ? "Send" : "Recv";
      const RankTrace& trace = ranks.at(m["rank"].get<int>());
      const auto it = trace.p2ps.find({p["comm_id"].get<uint64_t>(), func, other["comm_rank"].get<int>(),
                                       m["op_index"].get<uint64_t>()});
      ASSERT_NE(it, trace.p2ps.end()) << "rank " << m["rank"] << " lacks " << func << " of " << p.dump();
      const P2pRecord& r = it->second;
      EXPECT_EQ(r.bytes, bytesAsRecorded(p, false));
      EXPECT_EQ(trace.str(r.datatype), datatypeAsNcclNames(p["datatype"]));
      if (api_events) {
        // Plain sends and receives have no parent func; AlltoAll/Gather/Scatter pieces do.
        EXPECT_EQ(trace.str(r.parent_func), api_func == "Send" || api_func == "Recv" ? "" : api_func) << func;
        EXPECT_EQ(r.n_channels, p["n_channels"].get<int>());
        EXPECT_EQ(r.gpu_start_ns, m["gpu_start_ns"].get<uint64_t>());
        EXPECT_EQ(r.gpu_end_ns, m["gpu_stop_ns"].get<uint64_t>());
      } else {
        EXPECT_EQ(r.gpu_end_ns, 0u) << "v4 P2p events carry no channel count to wait for";
      }
      ++p2ps_checked;
    }
  }
  size_t planted_colls = 0, planted_p2ps = 0;
  for (const json& r : truth["planted_ops_per_rank"]) {
    planted_colls += r["colls"].get<size_t>();
    planted_p2ps += r["p2ps"].get<size_t>();
  }
  EXPECT_EQ(colls_checked, planted_colls);
  EXPECT_EQ(p2ps_checked, planted_p2ps);
  size_t recorded_colls = 0, recorded_p2ps = 0;
  for (const auto& [rank, trace] : ranks) {
    recorded_colls += trace.colls.size();
    recorded_p2ps += trace.p2ps.size();
  }
  EXPECT_EQ(recorded_colls, planted_colls) << "nothing recorded that was not planted";
  EXPECT_EQ(recorded_p2ps, planted_p2ps);
}

INSTANTIATE_TEST_SUITE_P(AbiVersions, DriverPluginE2E,
                         ::testing::Combine(::testing::Values(4, 5, 6, 7),
                                            ::testing::Values(Loading::kPluginOnly, Loading::kPreloaded),
                                            ::testing::Values(Ending::kReturn, Ending::kQuickExit)),
                         [](const ::testing::TestParamInfo<E2EParam>& param) {
                           return "v" + std::to_string(std::get<0>(param.param)) +
                                  (std::get<1>(param.param) == Loading::kPreloaded ? "_Preloaded" : "_PluginOnly") +
                                  (std::get<2>(param.param) == Ending::kQuickExit ? "_QuickExit" : "_Return");
                         });


// ---- rank and job under every launcher ----

// What one file says of its process: the header (written by the library's recorder) and
// the plugin's CommInfo for the world communicator.
struct ProcessView {
  int header_rank = -2;
  std::string job_id;
  int world_comm_rank = -2;    // the seat NCCL gave it in "world.0"
  std::set<int> info_ranks;    // every CommInfo's global rank
};

ProcessView viewOf(const std::string& path) {
  ProcessView v;
  TraceReader reader;
  std::string error;
  EXPECT_TRUE(reader.open(path, error)) << error;
  v.header_rank = reader.header().rank();
  v.job_id = reader.header().job_id();
  DecodedChunk chunk;
  while (reader.next(chunk)) {
    for (const RecordSlot& s : chunk.records) {
      if (s.kind != RecordKind::kCommInfo) continue;
      const CommInfoRecord& c = s.payload.comm_info;
      v.info_ranks.insert(c.global_rank);
      if (reader.str(c.comm_name) == "world.0") v.world_comm_rank = c.rank;
    }
  }
  return v;
}

struct LauncherCase {
  const char* launcher;
  const char* job_id;  // nullptr: none names the job, so each process makes one up
  bool names_rank;
};

class LauncherIdentityE2E : public ::testing::TestWithParam<std::tuple<LauncherCase, Loading>> {};

TEST_P(LauncherIdentityE2E, BothFacesAgreeOnRankAndJob) {
  const auto [launcher, loading] = GetParam();
  testutil::TempDir dir;
  const std::string command = std::string(kDriver) + " --scenario " + kScenario + " --plugin " + kPlugin +
                              (loading == Loading::kPreloaded ? " --preload" : "") + " --launcher " +
                              launcher.launcher + " --out " + dir.path() + " > " + dir.path() + "/driver.log 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  std::set<int> ranks;
  std::set<std::string> jobs;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    if (entry.path().extension() != ".ctrace") continue;
    const ProcessView v = viewOf(entry.path().string());
    ASSERT_GE(v.world_comm_rank, 0) << entry.path();
    const int expected = launcher.names_rank ? v.world_comm_rank : -1;  // the demo's world is in rank order
    EXPECT_EQ(v.header_rank, expected) << launcher.launcher << ": the file header";
    EXPECT_EQ(v.info_ranks, std::set<int>{expected}) << launcher.launcher << ": every CommInfo of the plugin";
    ranks.insert(v.world_comm_rank);
    jobs.insert(v.job_id);
    if (launcher.job_id != nullptr) {
      EXPECT_EQ(v.job_id, launcher.job_id);
    } else {
      EXPECT_EQ(v.job_id.rfind("ct-", 0), 0u) << v.job_id;
    }
  }
  EXPECT_EQ(ranks.size(), 8u);
  if (launcher.job_id == nullptr) {
    EXPECT_EQ(jobs.size(), 8u) << "made up per process: no launcher tells them apart";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Launchers, LauncherIdentityE2E,
    ::testing::Combine(::testing::Values(LauncherCase{"torchrun", "commtrace-demo", true},
                                         LauncherCase{"slurm", driver::kSlurmJobId, true},
                                         LauncherCase{"openmpi", driver::kOpenMpiNamespace, true},
                                         LauncherCase{"mpich", nullptr, true}, LauncherCase{"none", nullptr, false}),
                       ::testing::Values(Loading::kPluginOnly, Loading::kPreloaded)),
    [](const ::testing::TestParamInfo<std::tuple<LauncherCase, Loading>>& param) {
      return std::string(std::get<0>(param.param).launcher) +
             (std::get<1>(param.param) == Loading::kPreloaded ? "_Preloaded" : "_PluginOnly");
    });

}  // namespace
