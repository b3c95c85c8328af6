// The NCCL driver in-process: scenario files and their errors, the timing model's
// invariants, loading and binding a plugin as NCCL does, and what a plugin receives, per
// ABI version and per thread (checked through tests/fakes/fake_profiler_plugin.cc's log).
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <set>

#include "nccl-plugin/profiler_abi.h"
#include "tests/fakes/fake_profiler_log.h"
#include "tests/support/temp_dir.h"
#include "tools/nccl-driver/ground_truth.h"
#include "tools/nccl-driver/plugin_binding.h"
#include "tools/nccl-driver/profiler_host.h"
#include "tools/nccl-driver/rank_player.h"

namespace commtrace::driver {
namespace {

using namespace commtrace::nccl;
using testutil::FakeCall;
using testutil::TempDir;

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::optional<std::string>& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) setenv(name, value->c_str(), 1);
    else unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

Scenario parse(const std::string& json) { return parseScenario(json, "test.json"); }

uintptr_t ptrField(const FakeCall& c, const std::string& key) {
  const std::string& v = c[key];
  return v.empty() || v == "(nil)" ? 0 : std::stoull(v, nullptr, 16);
}

// 4 ranks on 2 nodes of 2: every kind of op and NCCL's quirks around them.
constexpr const char* kQuirks = R"({
  "name": "quirks", "nodes": 2, "ranks_per_node": 2, "steps": 2,
  "gpu_clock": {"node_offsets_ns": [0, 5000000]},
  "communicators": [
    {"name": "world", "groups": "world"},
    {"name": "solo", "groups": [[0], [1], [2], [3]]}
  ],
  "step": [
    {"compute_ms": 1},
    {"op": "AllReduce", "comm": "world", "count": 1048576, "datatype": "ncclFloat32", "user_tag": 77},
    {"op": "AllGather", "comm": "world", "count": 1000, "datatype": "ncclBfloat16"},
    {"op": "Broadcast", "comm": "world", "count": 300, "datatype": "ncclUint8", "root": 1},
    {"op": "Send", "comm": "world", "pairs": [[0, 2], [2, 0]], "count": 1200001, "datatype": "ncclInt8"},
    {"op": "AlltoAll", "comm": "world", "count": 64, "datatype": "ncclInt32"},
    {"op": "AllReduce", "comm": "world", "count": 0, "datatype": "ncclFloat32"},
    {"op": "AllReduce", "comm": "solo", "count": 16, "datatype": "ncclFloat32"}
  ]
})";

// One rank played in this process against a fake plugin, and what the plugin logged.
struct Played {
  Scenario scenario;
  Timeline timeline;
  PlayStats stats;
  std::vector<FakeCall> log;
  long user_tid = 0;

  std::vector<FakeCall> starts(uint64_t type) const {
    std::vector<FakeCall> out;
    for (const FakeCall& c : log)
      if (c.isStart(type)) out.push_back(c);
    return out;
  }
  // The calls made on a handle after its start, in order.
  std::vector<FakeCall> callsOn(uintptr_t handle) const {
    std::vector<FakeCall> out;
    for (const FakeCall& c : log)
      if ((c.kind == "state" || c.kind == "stop") && ptrField(c, "handle") == handle) out.push_back(c);
    return out;
  }
};

Played play(const std::string& json, int rank, const std::string& plugin, int version = 0) {
  TempDir dir;
  ScopedEnv log_dir("FAKE_PROFILER_LOG_DIR", dir.path());
  Played p{parse(json), {}, {}, {}, static_cast<long>(syscall(SYS_gettid))};
  p.timeline = buildTimeline(p.scenario);
  ProfilerHost host({plugin, version, false, "test"});
  RankPlayer player(p.scenario, p.timeline, rank, host);
  p.stats = player.play();
  p.log = testutil::readFakeLog(dir.path() + "/fake-" + std::to_string(getpid()) + ".log");
  return p;
}

// ---------------------------------------------------------------- scenario files

TEST(Scenario, ShippedScenariosParse) {
  const Scenario demo = loadScenario(COMMTRACE_SCENARIO_DIR "/demo.json");
  EXPECT_EQ(demo.ranks(), 8);
  EXPECT_EQ(demo.nodes, 2);
  ASSERT_EQ(demo.comms.size(), 3u);
  EXPECT_EQ(demo.comms[1].groups, (std::vector<std::vector<int>>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  ASSERT_EQ(demo.stragglers.size(), 1u);
  ASSERT_EQ(demo.slow_links.size(), 1u);
  EXPECT_NE(demo.node_offsets_ns[1], 0);
  const Scenario tiny = loadScenario(COMMTRACE_SCENARIO_DIR "/tiny.json");
  EXPECT_EQ(tiny.ranks(), 2);
  EXPECT_EQ(tiny.nodes, 1);
}

TEST(Scenario, RepeatExpandsItems) {
  const Scenario s = parse(R"({"name": "r", "nodes": 1, "ranks_per_node": 2, "steps": 1,
    "communicators": [{"name": "w", "groups": "world"}],
    "step": [{"compute_ms": 1, "repeat": 3}, {"op": "AllReduce", "comm": "w", "count": 4, "datatype": "ncclInt32", "repeat": 2}]})");
  ASSERT_EQ(s.step.size(), 5u);
  EXPECT_EQ(s.step[2].compute_ns, 1'000'000u);
  EXPECT_EQ(s.step[4].ops[0].count, 4u);
}

TEST(Scenario, ErrorsNameTheFileAndWhatIsWrong) {
  const std::string head = R"("name": "e", "nodes": 2, "ranks_per_node": 2, "steps": 2, )";
  const std::string comms = R"("communicators": [{"name": "w", "groups": "world"}, {"name": "pairs", "groups": [[0, 1], [2, 3]]}], )";
  const auto withStep = [&](const std::string& item) { return "{" + head + comms + R"("step": [)" + item + "]}"; };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{", "not valid JSON"},
      {"[]", "must be an object"},
      {R"({"nodes": 1, "ranks_per_node": 1, "steps": 1, "communicators": [], "step": []})", "'name' is missing"},
      {"{" + head + comms + R"("stragler": 1, "step": [{"compute_ms": 1}]})", "unknown key 'stragler'"},
      {"{" + head + R"("communicators": [{"name": "w", "groups": [[0, 9]]}], "step": [{"compute_ms": 1}]})", "must be an integer in [0, 3]"},
      {"{" + head + R"("communicators": [{"name": "w", "groups": [[0, 1], [1, 2]]}], "step": [{"compute_ms": 1}]})", "lists rank 1 twice"},
      {"{" + head + R"("communicators": [{"name": "w", "groups": "world"}, {"name": "w", "groups": "world"}], "step": [{"compute_ms": 1}]})", "used twice"},
      {withStep(R"({"op": "AllReduce", "comm": "nope", "count": 1, "datatype": "ncclInt8"})"), "names no communicator: 'nope'"},
      {withStep(R"({"op": "AllTheThings", "comm": "w", "count": 1, "datatype": "ncclInt8"})"), "'AllTheThings' is not one of"},
      {withStep(R"({"op": "AllReduce", "comm": "w", "count": 1, "datatype": "float"})"), "'float' is not an NCCL datatype"},
      {withStep(R"({"op": "AllReduce", "comm": "w", "count": -1, "datatype": "ncclInt8"})"), "'count' must be a non-negative integer"},
      {withStep(R"({"op": "Send", "comm": "pairs", "pairs": [[0, 2]], "count": 1, "datatype": "ncclInt8"})"), "are not in one group of 'pairs'"},
      {withStep(R"({"op": "Send", "comm": "w", "pairs": [[1, 1]], "count": 1, "datatype": "ncclInt8"})"), "needs two different ranks"},
      {withStep(R"({"op": "Broadcast", "comm": "pairs", "root": 2, "count": 1, "datatype": "ncclInt8"})"), "'root' must be an integer in [0, 1]"},
      {withStep(R"({"op": "AllReduce", "comm": "w", "count": 1, "datatype": "ncclInt8", "algo": "Ring"})"), "'Ring' must be TREE, RING"},
      {withStep(R"({"compute_ms": 1, "op": "AllReduce"})"), "exactly one of 'compute_ms', 'op' or 'group'"},
      {withStep(R"({"op": "AllReduce", "comm": "w", "count": 1, "datatype": "ncclInt8", "user_tag": 9223372036854775808})"), "top bit"},
      {withStep(R"({"group": [{"op": "AllReduce", "comm": "w", "count": 1, "datatype": "ncclInt8", "graph_captured": true},
                               {"op": "AllReduce", "comm": "w", "count": 1, "datatype": "ncclInt8"}]})"), "mixes graph_captured"},
      {"{" + head + comms + R"("gpu_clock": {"node_offsets_ns": [0]}, "step": [{"compute_ms": 1}]})", "one offset per node (2)"},
      {"{" + head + comms + R"("slow_links": [{"nodes": [0, 1], "ranks": [0, 1], "gbps": 1}], "step": [{"compute_ms": 1}]})", "exactly one of 'nodes' or 'ranks'"},
      {"{" + head + comms + R"("stragglers": [{"rank": 4}], "step": [{"compute_ms": 1}]})", "'rank' must be an integer in [0, 3]"},
      {"{" + head + comms + R"("step": []})", "'step' must list at least one item"},
  };
  for (const auto& [json, expected] : cases) {
    try {
      parse(json);
      ADD_FAILURE() << "accepted: " << json;
    } catch (const ScenarioError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind("commtrace: test.json: ", 0), 0u) << what;
      EXPECT_NE(what.find(expected), std::string::npos) << "expected '" << expected << "' in: " << what;
    }
  }
}

TEST(Scenario, MissingFileIsAnError) {
  try {
    loadScenario("/nonexistent/scenario.json");
    FAIL();
  } catch (const ScenarioError& e) {
    EXPECT_STREQ(e.what(), "commtrace: /nonexistent/scenario.json: cannot read the scenario file");
  }
}

// ---------------------------------------------------------------- timing model

TEST(TimingModel, CollectiveStopIsTheSameOnEveryMember) {
  const Scenario s = loadScenario(COMMTRACE_SCENARIO_DIR "/demo.json");
  const Timeline t = buildTimeline(s);
  ASSERT_FALSE(t.collectives.empty());
  for (const CollInstance& c : t.collectives) {
    uint64_t last = 0;
    for (const MemberTiming& m : c.members) {
      last = std::max(last, m.arrival_ns);
      // Every member's last channel stops at the shared stop, read on its own node's clock.
      EXPECT_EQ(m.gpu_stop_ns, gpuTimer(s, s.nodeOf(m.rank), c.stop_ns - s.gpu_clock_base_ns));
      EXPECT_EQ(m.gpu_start_ns, gpuTimer(s, s.nodeOf(m.rank), m.arrival_ns - s.gpu_clock_base_ns));
    }
    EXPECT_EQ(c.stop_ns, last + c.transfer_ns);
  }
  for (const P2pInstance& p : t.p2ps) {
    // A Send/Recv pair waits for its two ends; an AlltoAll's transfers for the whole group.
    if (p.api_func == Func::kSend) EXPECT_EQ(p.stop_ns, std::max(p.send.arrival_ns, p.recv.arrival_ns) + p.transfer_ns);
    else EXPECT_GE(p.stop_ns, std::max(p.send.arrival_ns, p.recv.arrival_ns) + p.transfer_ns);
    EXPECT_EQ(p.send.gpu_stop_ns, gpuTimer(s, s.nodeOf(p.send.rank), p.stop_ns - s.gpu_clock_base_ns));
    EXPECT_EQ(p.recv.gpu_stop_ns, gpuTimer(s, s.nodeOf(p.recv.rank), p.stop_ns - s.gpu_clock_base_ns));
  }
}

constexpr const char* kFourRanks = R"({
  "name": "four", "nodes": 1, "ranks_per_node": 4, "steps": 6, "compute_jitter_ms": 0.2,
  STRAGGLERS
  "communicators": [{"name": "w", "groups": "world"}],
  "step": [{"compute_ms": 3}, {"op": "AllReduce", "comm": "w", "count": 65536, "datatype": "ncclFloat32"},
           {"compute_ms": 2}, {"op": "AllGather", "comm": "w", "count": 65536, "datatype": "ncclFloat32"}]
})";

std::string fourRanks(const std::string& stragglers) {
  std::string s = kFourRanks;
  s.replace(s.find("STRAGGLERS"), 10, stragglers);
  return s;
}

TEST(TimingModel, PlantedStragglerArrivesLastAndOthersWaitForIt) {
  const Timeline t = buildTimeline(parse(fourRanks(R"("stragglers": [{"rank": 2, "extra_compute_ms": 1.5}],)")));
  ASSERT_EQ(t.collectives.size(), 12u);
  for (const CollInstance& c : t.collectives) {
    EXPECT_EQ(c.last_arrival_rank, 2);
    for (const MemberTiming& m : c.members)
      if (m.rank != 2) {
        EXPECT_GE(c.stop_ns - c.transfer_ns - m.arrival_ns, 1'500'000u - 400'000u);
      }
  }
  // Without it, jitter alone decides and no rank is always last.
  const Timeline fair = buildTimeline(parse(fourRanks("")));
  std::set<int> last;
  for (const CollInstance& c : fair.collectives) last.insert(c.last_arrival_rank);
  EXPECT_GT(last.size(), 1u);
}

TEST(TimingModel, SlowLinkLengthensTransfersOverIt) {
  const Scenario s = loadScenario(COMMTRACE_SCENARIO_DIR "/demo.json");
  const Timeline t = buildTimeline(s);
  const auto transfer = [&](Func func, int a, int b) {
    for (const CollInstance& c : t.collectives) {
      const auto& m = t.comms[c.comm].members;
      if (c.func == func && m.size() == 2 && m[0] == a && m[1] == b) return c.transfer_ns;
    }
    return uint64_t{0};
  };
  // dp pairs cross the nodes at 24 GB/s; ranks 3 and 7 share a 3 GB/s link.
  const uint64_t healthy = transfer(Func::kAllGather, 0, 4), slow = transfer(Func::kAllGather, 3, 7);
  ASSERT_GT(healthy, 0u);
  EXPECT_GT(slow, 6 * healthy);
  EXPECT_LT(slow, 9 * healthy);
  EXPECT_EQ(linkGbps(s, 7, 3), 3.0);
  EXPECT_EQ(linkGbps(s, 0, 4), 24.0);
  EXPECT_EQ(linkGbps(s, 0, 1), 150.0);
  for (const P2pInstance& p : t.p2ps) {
    const bool over_slow_link = (p.send.rank == 3 && p.recv.rank == 7) || (p.send.rank == 7 && p.recv.rank == 3);
    EXPECT_EQ(p.transfer_ns > 500'000, over_slow_link) << p.send.rank << "->" << p.recv.rank << " " << p.transfer_ns;
  }
}

TEST(TimingModel, ClockOffsetAndTickApplyPerNode) {
  const Scenario s = parse(kQuirks);
  const Timeline t = buildTimeline(s);
  for (const CollInstance& c : t.collectives) {
    for (const MemberTiming& m : c.members) {
      EXPECT_EQ(m.gpu_stop_ns % 1024, 0u);
      EXPECT_EQ(m.gpu_start_ns % 1024, 0u);
      const int64_t skew = static_cast<int64_t>(m.gpu_stop_ns) - static_cast<int64_t>(c.stop_ns);
      const int64_t offset = s.nodeOf(m.rank) == 0 ? 0 : 5'000'000;
      EXPECT_TRUE(skew > offset - 1024 && skew <= offset) << skew;
    }
  }
}

TEST(TimingModel, CountersFollowNccl) {
  const Timeline t = buildTimeline(parse(kQuirks));
  // Per step on "world": AllReduce, AllGather, Broadcast make Coll tasks; the count-0
  // AllReduce and the one-rank "solo" AllReduce make none.
  ASSERT_EQ(t.collectives.size(), 6u);
  std::map<std::string, std::vector<uint64_t>> seqs;
  for (const CollInstance& c : t.collectives) seqs[std::string(funcName(c.func))].push_back(c.seq);
  EXPECT_EQ(seqs["AllReduce"], (std::vector<uint64_t>{0, 1}));
  EXPECT_EQ(seqs["AllGather"], (std::vector<uint64_t>{0, 1}));
  for (size_t i = 0; i < t.collectives.size(); ++i) EXPECT_EQ(t.collectives[i].op_index, i);
  // Rank 0 per step: 2 sends/recvs with rank 2, and an AlltoAll Send+Recv with each of 3 peers.
  EXPECT_EQ(t.ranks[0].planted_colls, 6u);
  EXPECT_EQ(t.ranks[0].planted_p2ps, 16u);
  std::map<std::pair<int, int>, std::vector<uint64_t>> send_index;
  for (const P2pInstance& p : t.p2ps) send_index[{p.send.rank, p.recv.rank}].push_back(p.send.op_index);
  EXPECT_EQ(send_index[std::make_pair(0, 2)], (std::vector<uint64_t>{0, 1, 2, 3}));  // Send op, then AlltoAll, per step
}

TEST(TimingModel, SameScenarioSameTimeline) {
  const Scenario s = loadScenario(COMMTRACE_SCENARIO_DIR "/demo.json");
  EXPECT_EQ(groundTruthJson(s, buildTimeline(s)).dump(), groundTruthJson(s, buildTimeline(s)).dump());
}

TEST(GroundTruth, BandwidthAndPairBytesFollowNcclTests) {
  EXPECT_DOUBLE_EQ(nccl::busBwFactor(Func::kAllReduce, 8), 1.75);
  EXPECT_DOUBLE_EQ(nccl::busBwFactor(Func::kAllGather, 4), 0.75);
  EXPECT_DOUBLE_EQ(nccl::busBwFactor(Func::kBroadcast, 4), 1.0);
  const Scenario s = loadScenario(COMMTRACE_SCENARIO_DIR "/demo.json");
  const auto truth = groundTruthJson(s, buildTimeline(s));
  EXPECT_EQ(truth["planted"]["stragglers"][0]["rank"], 6);
  EXPECT_EQ(truth["planted"]["slow_links"][0]["ranks"], nlohmann::json::array({3, 7}));
  EXPECT_EQ(truth["planted_ops_per_rank"].size(), 8u);
  for (const auto& c : truth["collectives"]) {
    if (c["func"] != "AllReduce" || c["comm"] != "tp.0" || c["step"] != 0) continue;
    const double n = 4, bytes = c["bytes"].get<double>();
    EXPECT_NEAR(c["bus_bw_gbps"].get<double>(), bytes / c["transfer_ns"].get<double>() * 2 * (n - 1) / n, 1e-9);
  }
  // A ring AllReduce of S bytes on n ranks puts 2(n-1)/n * S on each of the n ring edges.
  uint64_t tp0_allreduce = 0;
  for (const auto& p : truth["pair_bytes"])
    if (p["func"] == "AllReduce" && p["src"] == 0 && p["dst"] == 1 && p["comm_id"] == truth["comms"][1]["id"]) tp0_allreduce = p["bytes"];
  EXPECT_EQ(tp0_allreduce, 2u * 20 * (2 * 3 * (4194304u * 2) / 4));
}

// ---------------------------------------------------------------- loading and binding

TEST(PluginLoading, BindsTheNewestExportedVersion) {
  auto all = PluginLibrary::open(FAKE_PLUGIN_ALL, 0);
  ASSERT_EQ(all.status, PluginLibrary::Status::kLoaded) << all.message;
  EXPECT_EQ(all.library->api().version(), 7);
  EXPECT_STREQ(all.library->api().name(), "fake-all");
  EXPECT_EQ(all.library->openedAs(), FAKE_PLUGIN_ALL);
  auto older = PluginLibrary::open(FAKE_PLUGIN_V4V5, 0);
  ASSERT_EQ(older.status, PluginLibrary::Status::kLoaded) << older.message;
  EXPECT_EQ(older.library->api().version(), 5);
}

TEST(PluginLoading, ForcedVersionLooksUpOnlyThatSymbol) {
  for (int v = 4; v <= 7; ++v) {
    auto opened = PluginLibrary::open(FAKE_PLUGIN_ALL, v);
    ASSERT_EQ(opened.status, PluginLibrary::Status::kLoaded);
    EXPECT_EQ(opened.library->api().version(), v);
  }
  auto missing = PluginLibrary::open(FAKE_PLUGIN_V4V5, 7);
  EXPECT_EQ(missing.status, PluginLibrary::Status::kFailed);
  EXPECT_EQ(missing.message, std::string("commtrace: profiler plugin '") + FAKE_PLUGIN_V4V5 +
                                 "' exports none of ncclProfiler_v7 (NCCL: \"External profiler plugin " + FAKE_PLUGIN_V4V5 +
                                 " is unsupported\")");
}

TEST(PluginLoading, NoKnownSymbolIsAClearError) {
  auto opened = PluginLibrary::open(FAKE_PLUGIN_NONE, 0);
  EXPECT_EQ(opened.status, PluginLibrary::Status::kFailed);
  EXPECT_EQ(opened.library, nullptr);
  EXPECT_NE(opened.message.find("exports none of ncclProfiler_v7, ncclProfiler_v6, ncclProfiler_v5, ncclProfiler_v4"),
            std::string::npos) << opened.message;
}

// Bare names are found on the library search path. LD_LIBRARY_PATH is read at process start
// (and a RUNPATH would not do: under ASan, dlopen's caller is the sanitizer runtime), so this
// test runs again as a fresh process with the fake plugins' directory on it.
TEST(PluginLoading, BareNameExpandsToLibncclProfilerName) {
  const pid_t child = fork();
  if (child == 0) {
    setenv("LD_LIBRARY_PATH", FAKE_PLUGIN_DIR, 1);
    setenv("COMMTRACE_TEST_EXPANSION_CHILD", "1", 1);
    execl("/proc/self/exe", "nccl_driver_test", "--gtest_filter=PluginLoadingOnSearchPath.*", nullptr);
    _exit(127);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child's failures are printed above";
}

TEST(PluginLoadingOnSearchPath, BareNameExpansion) {
  if (std::getenv("COMMTRACE_TEST_EXPANSION_CHILD") == nullptr) GTEST_SKIP() << "runs inside PluginLoading.BareNameExpandsToLibncclProfilerName";
  auto opened = PluginLibrary::open("fake", 0);
  ASSERT_EQ(opened.status, PluginLibrary::Status::kLoaded) << opened.message;
  EXPECT_EQ(opened.library->openedAs(), "libnccl-profiler-fake.so");
  EXPECT_STREQ(opened.library->api().name(), "fake-named");
  auto soname = PluginLibrary::open("libnccl-profiler-fake.so", 0);
  EXPECT_EQ(soname.status, PluginLibrary::Status::kLoaded) << "a soname is opened verbatim";

  auto missing = PluginLibrary::open("nosuchplugin", 0);
  EXPECT_NE(missing.message.find("libnccl-profiler-nosuchplugin.so"), std::string::npos) << missing.message;
  // Library names and paths are taken verbatim, never expanded.
  for (const char* verbatim : {"libnosuch.so", "/no/such/libnccl-profiler-x.so"}) {
    auto failed = PluginLibrary::open(verbatim, 0);
    EXPECT_EQ(failed.status, PluginLibrary::Status::kFailed);
    EXPECT_EQ(failed.message.find("libnccl-profiler-libnosuch"), std::string::npos) << failed.message;
    EXPECT_EQ(failed.message.find("; "), std::string::npos) << "tried twice: " << failed.message;
  }
}

TEST(PluginLoading, UnsetAndNone) {
  auto unset = PluginLibrary::open(nullptr, 0);
  EXPECT_EQ(unset.status, PluginLibrary::Status::kFailed);
  EXPECT_NE(unset.message.find("'libnccl-profiler.so'"), std::string::npos) << unset.message;
  auto none = PluginLibrary::open("NoNe", 0);
  EXPECT_EQ(none.status, PluginLibrary::Status::kDisabled);
}

TEST(PluginLoading, StaticPluginSearchesTheGlobalScope) {
  // In a child: the RTLD_GLOBAL load would leak into the other tests.
  EXPECT_EXIT(
      {
        auto before = PluginLibrary::open("STATIC_PLUGIN", 0);
        if (before.status != PluginLibrary::Status::kFailed) std::_Exit(1);
        if (dlopen(FAKE_PLUGIN_ALL, RTLD_NOW | RTLD_GLOBAL) == nullptr) std::_Exit(2);  // as LD_PRELOAD would
        auto opened = PluginLibrary::open("static", 0);  // NCCL matches any case-insensitive prefix
        if (opened.status != PluginLibrary::Status::kLoaded) std::_Exit(3);
        if (opened.library->openedAs() != "STATIC_PLUGIN" || opened.library->api().version() != 7) std::_Exit(4);
        std::_Exit(0);
      },
      testing::ExitedWithCode(0), "");
}

// ---------------------------------------------------------------- the profiler host

TEST(ProfilerHost, OneMaskForAllCommsAndReloadAfterTheLast) {
  TempDir dir;
  ScopedEnv log_dir("FAKE_PROFILER_LOG_DIR", dir.path());
  ScopedEnv mask("FAKE_PROFILER_MASK", "71");
  ProfilerHost host({FAKE_PLUGIN_ALL, 0, false, "test"});
  CommProfile a = host.initComm(11, "a", 1, 2, 0);
  CommProfile b = host.initComm(22, nullptr, 2, 4, 3);
  EXPECT_TRUE(a.profiled && b.profiled);
  EXPECT_EQ(host.loads(), 1);
  EXPECT_EQ(host.mask(), 71);
  host.finalizeComm(a);
  EXPECT_NE(host.api(), nullptr);
  host.finalizeComm(b);
  EXPECT_EQ(host.api(), nullptr) << "dlclosed after the last communicator";
  CommProfile c = host.initComm(33, "c", 1, 2, 1);
  EXPECT_TRUE(c.profiled);
  EXPECT_EQ(host.loads(), 2) << "a later communicator loads the plugin again";
  host.finalizeComm(c);

  const auto log = testutil::readFakeLog(testutil::fakeLogFiles(dir.path()).at(0));
  std::vector<FakeCall> inits;
  for (const FakeCall& call : log)
    if (call.kind == "init") inits.push_back(call);
  ASSERT_EQ(inits.size(), 3u);
  EXPECT_EQ(inits[0]["comm_id"], "11");
  EXPECT_EQ(inits[1]["name"], "(null)");
  EXPECT_EQ(inits[1]["n_nodes"], "2");
  EXPECT_EQ(inits[1]["n_ranks"], "4");
  EXPECT_EQ(inits[1]["rank"], "3");
  EXPECT_EQ(inits[0]["mask_ptr"], inits[1]["mask_ptr"]);
  EXPECT_EQ(inits[0]["mask_ptr"], inits[2]["mask_ptr"]);
  EXPECT_EQ(std::count_if(log.begin(), log.end(), [](const FakeCall& f) { return f.kind == "finalize"; }), 3);
}

TEST(ProfilerHost, FailedInitLeavesThatCommUnprofiled) {
  ScopedEnv fail("FAKE_PROFILER_INIT_FAIL", "bad");
  ProfilerHost host({FAKE_PLUGIN_ALL, 0, false, "test"});
  CommProfile good = host.initComm(1, "good", 1, 2, 0);
  testing::internal::CaptureStderr();
  CommProfile bad = host.initComm(2, "bad", 1, 2, 0);
  const std::string warning = testing::internal::GetCapturedStderr();
  EXPECT_TRUE(good.profiled);
  EXPECT_FALSE(bad.profiled);
  EXPECT_NE(warning.find("Profiler init failed with error '3'"), std::string::npos) << warning;
  EXPECT_NE(warning.find("Continue without profiler."), std::string::npos) << warning;
  host.finalizeComm(bad);
  EXPECT_NE(host.api(), nullptr) << "the failed comm gave its reference back once, not twice";
  host.finalizeComm(good);
  EXPECT_EQ(host.api(), nullptr);
}

TEST(ProfilerHost, FailedLoadIsSticky) {
  TempDir dir;
  const std::string path = dir.path() + "/libappears-later.so";
  ProfilerHost host({path, 0, false, "test"});
  testing::internal::CaptureStderr();
  CommProfile first = host.initComm(1, "a", 1, 1, 0);
  const std::string warning = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(first.profiled);
  EXPECT_EQ(host.status(), PluginLibrary::Status::kFailed);
  EXPECT_NE(warning.find("cannot open profiler plugin '" + path + "'"), std::string::npos) << warning;
  std::filesystem::copy_file(FAKE_PLUGIN_ALL, path);
  EXPECT_FALSE(host.initComm(2, "b", 1, 1, 0).profiled) << "NCCL never retries a failed load";
}

// ---------------------------------------------------------------- what the plugin receives

TEST(Descriptors, V5HierarchyOfOneCollective) {
  const Played p = play(kQuirks, 0, FAKE_PLUGIN_ALL, 5);
  std::vector<FakeCall> user;
  for (const FakeCall& c : p.log)
    if (c.kind != "init" && std::stol(c["tid"]) == p.user_tid) user.push_back(c);
  ASSERT_GE(user.size(), 12u);
  // An ungrouped call: GroupApi -> 23 -> CollApi -> 24 -> KernelLaunch -> Group -> Coll ->
  // stops, the CollApi's last: NCCL ends the implicit group inside the call.
  const auto h = [&](size_t i) { return ptrField(user[i], "handle"); };
  EXPECT_TRUE(user[0].isStart(kGroupApi));
  EXPECT_EQ(user[0].at<int>(offsetof(EventDescrV5, u.group_api.group_depth)), 1);
  EXPECT_EQ(user[1].kind + user[1]["state"], "state23");
  EXPECT_EQ(user[1]["args"], "null");
  EXPECT_TRUE(user[2].isStart(kCollApi));
  EXPECT_EQ(ptrField(user[2], "parent"), h(0));
  EXPECT_EQ(user[2]["func"], "AllReduce");
  EXPECT_EQ(user[2].at<size_t>(offsetof(EventDescrV5, u.coll_api.count)), 1048576u);
  EXPECT_EQ(user[3].kind + user[3]["state"], "state24");
  EXPECT_TRUE(user[4].isStart(kKernelLaunch));
  EXPECT_EQ(ptrField(user[4], "parent"), h(0));
  EXPECT_EQ(user[5].kind, "stop");
  EXPECT_TRUE(user[6].isStart(kGroup));
  EXPECT_EQ(ptrField(user[6], "parent"), 0u);
  EXPECT_TRUE(user[7].isStart(kColl));
  EXPECT_EQ(ptrField(user[7], "parent"), h(2)) << "Coll's parent is its CollApi";
  EXPECT_EQ(user[7].at<uintptr_t>(offsetof(EventDescrV5, u.coll.parent_group)), h(6));
  EXPECT_EQ(user[7].at<uint64_t>(offsetof(EventDescrV5, type)), kColl) << "v5 type is 64 bits";
  EXPECT_EQ(user[7]["algo"], "RING");
  EXPECT_EQ(user[7]["proto"], "SIMPLE");
  EXPECT_EQ(user[7].at<uint8_t>(offsetof(EventDescrV5, u.coll.v4.n_channels)), 8);
  EXPECT_EQ(user[8].kind + std::to_string(h(8) == h(7)), "stop1");
  EXPECT_EQ(user[9].kind + std::to_string(h(9) == h(6)), "stop1");
  EXPECT_EQ(user[10].kind + std::to_string(h(10) == h(2)), "stop1") << "the CollApi returns after the launch";
  EXPECT_EQ(user[11].kind + std::to_string(h(11) == h(0)), "stop1");
  EXPECT_EQ(p.stats.coll_events, p.timeline.ranks[0].planted_colls);
  EXPECT_EQ(p.stats.p2p_events, p.timeline.ranks[0].planted_p2ps);
}

TEST(Descriptors, NcclQuirksInV5) {
  const Played p = play(kQuirks, 0, FAKE_PLUGIN_ALL, 5);
  std::map<std::string, std::vector<FakeCall>> colls, coll_apis;
  for (const FakeCall& c : p.starts(kColl)) colls[c["func"]].push_back(c);
  for (const FakeCall& c : p.starts(kCollApi)) coll_apis[c["func"]].push_back(c);
  ASSERT_EQ(colls["AllGather"].size(), 2u);
  // AllGather and Broadcast: the Coll count is bytes of ncclInt8; CollApi keeps the user's.
  EXPECT_EQ(colls["AllGather"][0].at<size_t>(offsetof(EventDescrV5, u.coll.v4.count)), 2000u);
  EXPECT_EQ(colls["AllGather"][0]["datatype"], "ncclInt8");
  EXPECT_EQ(coll_apis["AllGather"][0].at<size_t>(offsetof(EventDescrV5, u.coll_api.count)), 1000u);
  EXPECT_EQ(coll_apis["AllGather"][0]["datatype"], "ncclBfloat16");
  EXPECT_EQ(coll_apis["Broadcast"][0]["datatype"], "Unknown") << "ncclUint8 has no name in NCCL";
  EXPECT_EQ(colls["Broadcast"][0]["datatype"], "ncclInt8");
  EXPECT_EQ(colls["Broadcast"][0].at<int>(offsetof(EventDescrV5, u.coll.v4.root)), 1);
  // Per-func seqNumber on the world comm; the count-0 and one-rank AllReduces make no Coll.
  std::vector<uint64_t> seqs;
  for (const FakeCall& c : colls["AllReduce"]) seqs.push_back(c.at<uint64_t>(offsetof(EventDescrV5, u.coll.v4.seq_number)));
  EXPECT_EQ(seqs, (std::vector<uint64_t>{0, 1}));
  EXPECT_EQ(coll_apis["AllReduce"].size(), 6u) << "but their CollApi events are there";
  EXPECT_EQ(coll_apis["AllReduce"][0].at<int>(offsetof(EventDescrV5, rank)), 0);
  // AlltoAll: one P2pApi per send and per recv, func "AlltoAll", each the parent of a Send/Recv.
  std::map<uintptr_t, FakeCall> p2p_apis;
  for (const FakeCall& c : p.starts(kP2pApi)) p2p_apis[ptrField(c, "handle")] = c;
  int alltoall_sends = 0, alltoall_recvs = 0;
  for (const FakeCall& c : p.starts(kP2p)) {
    const FakeCall& parent = p2p_apis.at(ptrField(c, "parent"));
    EXPECT_EQ(parent.at<size_t>(offsetof(EventDescrV5, u.p2p_api.count)), c.at<size_t>(offsetof(EventDescrV5, u.p2p.v4.count)));
    if (parent["func"] != "AlltoAll") continue;
    EXPECT_EQ(c["datatype"], "ncclInt32");
    (c["func"] == "Send" ? alltoall_sends : alltoall_recvs)++;
    EXPECT_NE(c.at<int>(offsetof(EventDescrV5, u.p2p.v4.peer)), 0) << "peer is another comm rank";
    EXPECT_EQ(c.at<uint8_t>(offsetof(EventDescrV5, u.p2p.v4.n_channels)), 1);
  }
  EXPECT_EQ(alltoall_sends, 6);
  EXPECT_EQ(alltoall_recvs, 6);
  // The Send/Recv pair with rank 2 is one user group.
  int depth2 = 0;
  for (const FakeCall& g : p.starts(kGroupApi)) depth2 += g.at<int>(offsetof(EventDescrV5, u.group_api.group_depth)) == 2;
  EXPECT_EQ(depth2, 4);
}

TEST(Descriptors, V4HasNoApiEventsAndNcclsStackGarbage) {
  const Played p = play(kQuirks, 0, FAKE_PLUGIN_ALL, 4);
  std::map<uintptr_t, uint64_t> types;
  for (const FakeCall& c : p.log) {
    if (c.kind == "init") {
      EXPECT_EQ(c["v"], "4");
    }
    if (c.kind != "start") continue;
    EXPECT_LT(c.num("type"), 256u) << "no GroupApi/CollApi/P2pApi/KernelLaunch in NCCL 2.27";
    ASSERT_EQ(c.descr.size(), sizeof(EventDescrV4));
    for (size_t i = 1; i < 8; ++i) EXPECT_EQ(c.descr[i], 0xA5) << "type is a uint8_t followed by unwritten bytes";
    types[ptrField(c, "handle")] = c.num("type");
  }
  const auto colls = p.starts(kColl);
  ASSERT_EQ(colls.size(), 6u);
  for (const FakeCall& c : colls) EXPECT_EQ(types.at(ptrField(c, "parent")), kGroup) << "a v4 Coll hangs under its Group";
  EXPECT_EQ(colls[1].at<size_t>(offsetof(EventDescrV4, u.coll.count)), 2000u);
  EXPECT_EQ(colls[1]["datatype"], "ncclInt8");
  const auto p2ps = p.starts(kP2p);
  ASSERT_EQ(p2ps.size(), 16u);
  for (const FakeCall& c : p2ps) {
    EXPECT_EQ(types.at(ptrField(c, "parent")), kGroup);
    EXPECT_EQ(c.at<uint8_t>(offsetof(EventDescrV4, u.p2p.n_channels)), 0xA5) << "NCCL never fills v4 p2p.nChannels";
  }
  EXPECT_EQ(p.starts(kKernelCh).size(), p.stats.kernel_ch_events);
  EXPECT_GT(p.stats.kernel_ch_events, 0u);
}

TEST(Descriptors, V7CarriesTheUserTag) {
  const Played p = play(kQuirks, 0, FAKE_PLUGIN_ALL, 7);
  const auto colls = p.starts(kColl), apis = p.starts(kCollApi);
  ASSERT_FALSE(colls.empty());
  EXPECT_EQ(colls[0].descr.size(), sizeof(EventDescrV7));
  EXPECT_EQ(colls[0].at<uint64_t>(offsetof(EventDescrV7, u.coll.user_tag)), 77u);
  EXPECT_EQ(colls[0].at<uintptr_t>(offsetof(EventDescrV7, u.coll.kernel_variant)), 0u);
  EXPECT_EQ(colls[0].at<bool>(offsetof(EventDescrV7, u.coll.is_sym_coll)), false);
  EXPECT_EQ(apis[0].at<uint64_t>(offsetof(EventDescrV7, u.coll_api.user_tag)), 77u);
  EXPECT_EQ(colls[1].at<uint64_t>(offsetof(EventDescrV7, u.coll.user_tag)), 0u);
}

// ---------------------------------------------------------------- threads and GPU timers

TEST(Threads, KernelChComesFromTheProxyThreadWithThePlantedTimers) {
  const Played p = play(kQuirks, 0, FAKE_PLUGIN_ALL);
  const auto colls = p.starts(kColl), channels = p.starts(kKernelCh);
  ASSERT_FALSE(channels.empty());
  std::set<std::string> channel_tids;
  for (const FakeCall& c : channels) channel_tids.insert(c["tid"]);
  EXPECT_EQ(channel_tids.size(), 1u) << "one proxy thread per process";
  EXPECT_NE(std::stol(*channel_tids.begin()), p.user_tid);
  for (const FakeCall& c : colls) EXPECT_EQ(std::stol(c["tid"]), p.user_tid);

  // The first AllReduce: its KernelCh children span exactly the planted GPU start and stop.
  const CollInstance& planted = p.timeline.collectives.at(0);
  const uintptr_t coll = ptrField(colls.at(0), "handle");
  uint64_t first_start = UINT64_MAX, last_stop = 0;
  int n = 0;
  for (const FakeCall& c : channels) {
    if (ptrField(c, "parent") != coll) continue;
    EXPECT_EQ(c.at<uint8_t>(offsetof(EventDescrV5, u.kernel_ch.channel_id)), n++);
    first_start = std::min(first_start, c.at<uint64_t>(offsetof(EventDescrV5, u.kernel_ch.p_timer)));
    const auto after = p.callsOn(ptrField(c, "handle"));
    ASSERT_EQ(after.size(), 2u);
    EXPECT_EQ(after[0]["state"], std::to_string(kKernelChStop));
    uint64_t stop = 0;
    const auto args = testutil::fromHex(after[0]["args"]);
    std::memcpy(&stop, args.data(), 8);
    last_stop = std::max(last_stop, stop);
    EXPECT_EQ(after[1].kind, "stop");
  }
  EXPECT_EQ(n, planted.n_channels);
  EXPECT_EQ(first_start, planted.members[0].gpu_start_ns);
  EXPECT_EQ(last_stop, planted.members[0].gpu_stop_ns);
}

TEST(Threads, ChildrenStartAfterTheirParentStopped) {
  const Played p = play(kQuirks, 0, FAKE_PLUGIN_ALL);
  std::map<uintptr_t, size_t> stopped_at;
  for (size_t i = 0; i < p.log.size(); ++i)
    if (p.log[i].kind == "stop") stopped_at[ptrField(p.log[i], "handle")] = i;
  size_t checked = 0;
  for (size_t i = 0; i < p.log.size(); ++i) {
    if (!p.log[i].isStart(kKernelCh) && !p.log[i].isStart(kProxyOp)) continue;
    EXPECT_LT(stopped_at.at(ptrField(p.log[i], "parent")), i) << "Coll/P2p stop means enqueued; the GPU side comes later";
    ++checked;
  }
  EXPECT_GT(checked, 0u);
}

constexpr const char* kCaptured = R"({
  "name": "captured", "nodes": 1, "ranks_per_node": 2, "steps": 3,
  "communicators": [{"name": "w", "groups": "world"}],
  "step": [{"compute_ms": 1},
           {"op": "AllReduce", "comm": "w", "count": 1024, "datatype": "ncclFloat32", "graph_captured": true},
           {"op": "AllReduce", "comm": "w", "count": 1024, "datatype": "ncclFloat32"}]
})";

std::vector<uint64_t> collSeqs(const Played& p) {
  std::vector<uint64_t> out;
  for (const FakeCall& c : p.starts(kColl)) out.push_back(c.at<uint64_t>(offsetof(EventDescrV5, u.coll.v4.seq_number)));
  return out;
}

TEST(Threads, GraphCapturedCollsComeFromTheHostCallbackThread) {
  const Played p = play(kCaptured, 0, FAKE_PLUGIN_ALL, 5);
  const auto colls = p.starts(kColl), apis = p.starts(kCollApi);
  ASSERT_EQ(colls.size(), 6u);
  ASSERT_EQ(apis.size(), 6u);
  EXPECT_EQ(apis[0].at<bool>(offsetof(EventDescrV5, u.coll_api.graph_captured)), true);
  EXPECT_EQ(apis[1].at<bool>(offsetof(EventDescrV5, u.coll_api.graph_captured)), false);
  const std::string proxy_tid = p.starts(kKernelCh).at(0)["tid"];
  std::set<std::string> tids{std::to_string(p.user_tid), proxy_tid};
  for (size_t i = 0; i < colls.size(); i += 2) tids.insert(colls[i]["tid"]);
  EXPECT_EQ(tids.size(), 3u) << "user, proxy and host-callback threads";
  for (size_t i = 1; i < colls.size(); i += 2) EXPECT_EQ(std::stol(colls[i]["tid"]), p.user_tid);
  EXPECT_EQ(collSeqs(p), (std::vector<uint64_t>{0, 1, 2, 3, 4, 5})) << "KernelCh on: captured ops count";
}

TEST(Threads, GraphCapturedWithoutKernelChNeitherFiresNorCounts) {
  ScopedEnv mask("FAKE_PROFILER_MASK", std::to_string(4095 & ~kKernelCh));
  const Played p = play(kCaptured, 0, FAKE_PLUGIN_ALL, 5);
  EXPECT_EQ(p.starts(kCollApi).size(), 6u);
  EXPECT_EQ(collSeqs(p), (std::vector<uint64_t>{0, 1, 2})) << "intra-node captured ops get no host callback (#1805)";
}

// ---------------------------------------------------------------- the activation mask

TEST(Mask, AChildTypeTurnsOnItsAncestors) {
  ScopedEnv mask("FAKE_PROFILER_MASK", std::to_string(kProxyOp));
  const Played p = play(kQuirks, 0, FAKE_PLUGIN_ALL, 5);
  for (uint64_t type : {kGroupApi, kCollApi, kP2pApi, kGroup, kColl, kP2p, kProxyOp}) EXPECT_FALSE(p.starts(type).empty()) << type;
  for (uint64_t type : {kKernelLaunch, kKernelCh, kProxyStep, kProxyCtrl}) EXPECT_TRUE(p.starts(type).empty()) << type;
}

TEST(Mask, CollOnlyStillOpensEveryGroupApi) {
  ScopedEnv mask("FAKE_PROFILER_MASK", std::to_string(kColl));
  const Played p = play(kQuirks, 0, FAKE_PLUGIN_ALL, 5);
  EXPECT_EQ(p.starts(kColl).size(), 6u);
  EXPECT_TRUE(p.starts(kP2p).empty());
  EXPECT_TRUE(p.starts(kP2pApi).empty());
  EXPECT_EQ(p.starts(kGroupApi).size(), p.timeline.ranks[0].groups.size());
}

TEST(Mask, UntrackedParentsGetNoChildren) {
  ScopedEnv nulls("FAKE_PROFILER_NULL_TYPES", std::to_string(kColl | kP2p));
  const Played p = play(kQuirks, 0, FAKE_PLUGIN_ALL, 5);
  EXPECT_EQ(p.starts(kColl).size(), 6u);
  EXPECT_TRUE(p.starts(kKernelCh).empty());
  EXPECT_TRUE(p.starts(kProxyOp).empty());
}

// ---------------------------------------------------------------- the network side

TEST(Proxy, StepsCarryEveryNetworkByteInNcclsStateOrder) {
  const Played p = play(kQuirks, 0, FAKE_PLUGIN_ALL, 5);
  const Scenario& s = p.scenario;
  uint64_t planted_sent = 0, planted_received = 0;
  for (const CollInstance& c : p.timeline.collectives)
    for (const Edge& e : c.edges) {
      if (s.nodeOf(e.src) == s.nodeOf(e.dst)) continue;
      if (e.src == 0) planted_sent += e.bytes;
      if (e.dst == 0) planted_received += e.bytes;
    }
  for (const P2pInstance& x : p.timeline.p2ps)
    if (s.nodeOf(x.send.rank) != s.nodeOf(x.recv.rank)) {
      if (x.send.rank == 0) planted_sent += x.bytes;
      if (x.recv.rank == 0) planted_received += x.bytes;
    }
  ASSERT_GT(planted_sent, 0u);

  uint64_t sent = 0, received = 0;
  const pid_t pid = getpid();
  for (const FakeCall& op : p.starts(kProxyOp)) {
    EXPECT_EQ(op.at<int32_t>(offsetof(EventDescrV5, u.proxy_op.pid)), pid);
    const bool is_send = op.at<int>(offsetof(EventDescrV5, u.proxy_op.is_send)) == 1;
    const auto on_op = p.callsOn(ptrField(op, "handle"));
    EXPECT_EQ(on_op.front()["state"], std::to_string(kProxyOpInProgress));
    int steps = 0;
    for (const FakeCall& step : p.starts(kProxyStep)) {
      if (ptrField(step, "parent") != ptrField(op, "handle")) continue;
      EXPECT_EQ(step.at<int>(offsetof(EventDescrV5, u.proxy_step.step)), steps++);
      const auto states = p.callsOn(ptrField(step, "handle"));
      ASSERT_EQ(states.size(), 4u);
      const std::vector<std::string> expected =
          is_send ? std::vector<std::string>{"8", "20", "9"} : std::vector<std::string>{"10", "11", "12"};
      for (size_t k = 0; k < 3; ++k) EXPECT_EQ(states[k]["state"], expected[k]);
      uint64_t size = 0;
      std::memcpy(&size, testutil::fromHex(states[2]["args"]).data(), 8);
      (is_send ? sent : received) += size;
    }
    EXPECT_EQ(steps, op.at<int>(offsetof(EventDescrV5, u.proxy_op.n_steps)));
  }
  EXPECT_EQ(sent, planted_sent);
  EXPECT_EQ(received, planted_received);
  EXPECT_FALSE(p.starts(kProxyCtrl).empty());
  for (const FakeCall& c : p.starts(kProxyCtrl)) EXPECT_EQ(ptrField(c, "parent"), 0u);
}

TEST(Recreate, CommsAreDestroyedAndTheirPluginReloaded) {
  const std::string json = R"({"name": "again", "nodes": 1, "ranks_per_node": 2, "steps": 4, "recreate_comms_at_steps": [2],
    "communicators": [{"name": "w", "groups": "world"}],
    "step": [{"op": "AllReduce", "comm": "w", "count": 8, "datatype": "ncclFloat32"}]})";
  const Played p = play(json, 1, FAKE_PLUGIN_ALL);
  std::vector<std::string> calls;
  for (const FakeCall& c : p.log)
    if (c.kind == "init" || c.kind == "finalize") calls.push_back(c.kind + (c.kind == "init" ? ":" + c["comm_id"] : ""));
  ASSERT_EQ(p.timeline.comms.size(), 2u);
  const std::string first = std::to_string(p.timeline.comms[0].id), second = std::to_string(p.timeline.comms[1].id);
  EXPECT_NE(first, second);
  EXPECT_EQ(calls, (std::vector<std::string>{"init:" + first, "finalize", "init:" + second, "finalize"}));
  EXPECT_EQ(collSeqs(p), (std::vector<uint64_t>{0, 1, 0, 1})) << "a new communicator counts from 0";
}

}  // namespace
}  // namespace commtrace::driver
