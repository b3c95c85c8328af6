// The NCCL API wrappers of libcommtrace.so in real child processes: nccl_wrappers_child,
// linked against the fake libnccl.so.2, runs under LD_PRELOAD=libcommtrace.so and the test
// reads the trace file it leaves. Two children given the same unique id play two ranks of
// one job (the fake does not communicate, it only answers).
//
// Without the profiler plugin every op must come from the wrappers; with the fake playing
// NCCL's side of the plugin (FAKE_NCCL_PLUGIN) every op must still appear exactly once:
// from the plugin where it sees the op, from the wrapper where it cannot (single-rank
// communicators, copy-engine collectives, v4 without API events).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "interpose/comm_registry.h"
#include "interpose/nccl_api.h"
#include "sink/reader.h"
#include "tests/programs/nccl_wrappers_scenario.h"
#include "tests/support/run_program.h"
#include "tests/support/temp_dir.h"

namespace {

using namespace commtrace;
using commtrace::testing::CommRole;
using commtrace::testing::ScenarioStep;
using commtrace::testing::scenarioSteps;
using commtrace::testing::uniqueIdOf;
namespace na = commtrace::nccl_api;

constexpr const char* kLibrary = COMMTRACE_SO_PATH;
constexpr const char* kChild = NCCL_WRAPPERS_CHILD_PATH;
constexpr const char* kFakeNcclDir = FAKE_NCCL_DIR;

using Env = std::map<std::string, std::optional<std::string>>;

// ---- one child's trace file, strings resolved ----

struct Coll {
  CollRecord r;
  std::string func, datatype, algo;
};
struct P2p {
  P2pRecord r;
  std::string func, datatype, parent;
};
struct Span {
  ApiSpanRecord r;
  std::string name;
};
struct CommInfo {
  CommInfoRecord r;
  std::string name;
};

struct Trace {
  trace::v1::FileHeader header;
  std::vector<Coll> colls;
  std::vector<P2p> p2ps;
  std::vector<Span> spans;
  std::vector<CommInfo> infos;

  std::vector<const Span*> spansNamed(const std::string& name) const {
    std::vector<const Span*> out;
    for (const Span& s : spans) {
      if (s.name == name) out.push_back(&s);
    }
    return out;
  }
  std::vector<const CommInfo*> infosOf(uint64_t comm_id) const {
    std::vector<const CommInfo*> out;
    for (const CommInfo& c : infos) {
      if (c.r.comm_id == comm_id) out.push_back(&c);
    }
    return out;
  }
};

std::vector<std::string> traceFiles(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".ctrace") files.push_back(entry.path().string());
  }
  return files;
}

Trace readTrace(const std::string& dir) {
  Trace t;
  const std::vector<std::string> files = traceFiles(dir);
  EXPECT_EQ(files.size(), 1u) << "one trace file per process in " << dir;
  if (files.size() != 1) return t;
  TraceReader reader;
  std::string error;
  EXPECT_TRUE(reader.open(files[0], error)) << error;
  t.header = reader.header();
  DecodedChunk chunk;
  auto str = [&](StringId id) { return std::string(reader.str(id)); };
  while (reader.next(chunk)) {
    for (const RecordSlot& s : chunk.records) {
      switch (s.kind) {
        case RecordKind::kColl: {
          const CollRecord& c = s.payload.coll;
          t.colls.push_back({c, str(c.func), str(c.datatype), str(c.algo)});
          break;
        }
        case RecordKind::kP2p: {
          const P2pRecord& p = s.payload.p2p;
          t.p2ps.push_back({p, str(p.func), str(p.datatype), str(p.parent_func)});
          break;
        }
        case RecordKind::kApiSpan: t.spans.push_back({s.payload.api_span, str(s.payload.api_span.name)}); break;
        case RecordKind::kCommInfo: t.infos.push_back({s.payload.comm_info, str(s.payload.comm_info.comm_name)}); break;
        default: break;
      }
    }
  }
  EXPECT_TRUE(reader.issues().empty()) << reader.issues().front().message;
  return t;
}

struct ChildRun {
  testutil::ProgramResult program;
  Trace trace;
};

// One child process under the preload, recording into a fresh run directory.
ChildRun runChild(const std::string& mode, int rank, int n_ranks, const std::string& seed, Env env = {}) {
  testutil::TempDir dir;
  env["LD_PRELOAD"] = kLibrary;
  env["LD_LIBRARY_PATH"] = kFakeNcclDir;
  env["COMMTRACE_DIR"] = dir.path();
  for (const char* launcher :
       {"RANK", "LOCAL_RANK", "WORLD_SIZE", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK"}) {
    env.try_emplace(launcher, std::nullopt);
  }
  for (const char* fake : {"FAKE_NCCL_RESULT", "FAKE_NCCL_INIT_RESULT", "FAKE_NCCL_PLUGIN", "FAKE_NCCL_CE_FUNCS",
                           "NCCL_PROFILER_PLUGIN", "COMMTRACE_NCCL_API"}) {
    env.try_emplace(fake, std::nullopt);
  }
  env.try_emplace("FAKE_NCCL_DEVICE", std::to_string(3 + 2 * rank));
  ChildRun run;
  run.program = testutil::runProgram({kChild, mode, std::to_string(rank), std::to_string(n_ranks), seed}, dir.path(),
                                     env);
  EXPECT_EQ(run.program.exit_code, 0) << mode << " rank " << rank << ": " << run.program.err;
  if (!traceFiles(dir.path()).empty()) run.trace = readTrace(dir.path());
  return run;
}

int deviceOf(int rank) { return 3 + 2 * rank; }

// ---- what the scenario must leave in the file of one rank ----

enum class Shape { kColl, kP2p, kPieces, kGroup };

struct ApiFunc {
  std::string_view api, func;
  Shape shape;
};
constexpr ApiFunc kApis[] = {
    {"ncclAllReduce", "AllReduce", Shape::kColl},    {"ncclBroadcast", "Broadcast", Shape::kColl},
    {"ncclBcast", "Broadcast", Shape::kColl},        {"ncclReduce", "Reduce", Shape::kColl},
    {"ncclAllGather", "AllGather", Shape::kColl},    {"ncclReduceScatter", "ReduceScatter", Shape::kColl},
    {"ncclAlltoAll", "AlltoAll", Shape::kPieces},    {"ncclGather", "Gather", Shape::kPieces},
    {"ncclScatter", "Scatter", Shape::kPieces},      {"ncclSend", "Send", Shape::kP2p},
    {"ncclRecv", "Recv", Shape::kP2p},               {"ncclGroupStart", "", Shape::kGroup},
    {"ncclGroupEnd", "", Shape::kGroup}};

const ApiFunc& apiFunc(std::string_view api) {
  return *std::find_if(std::begin(kApis), std::end(kApis), [&](const ApiFunc& a) { return a.api == api; });
}

struct ExpectedOp {
  CommRole role;
  bool is_p2p;
  std::string func, parent, datatype;
  uint64_t stream, count, bytes, seq, op_index;
  int root_or_peer;
};

int ranksOf(CommRole role, int n_world) { return role == CommRole::kSolo ? 1 : n_world; }
int rankIn(CommRole role, int rank) { return role == CommRole::kSolo ? 0 : rank; }

std::vector<ExpectedOp> expectedOps(int rank, int n_world, const std::vector<ScenarioStep>& steps = scenarioSteps()) {
  std::map<std::pair<CommRole, std::string>, uint64_t> seq;
  std::map<CommRole, uint64_t> coll_index;
  std::map<std::tuple<CommRole, bool, int>, uint64_t> p2p_index;
  std::vector<ExpectedOp> out;
  for (const ScenarioStep& s : steps) {
    const ApiFunc& f = apiFunc(s.api);
    if (f.shape == Shape::kGroup || (f.shape == Shape::kColl && s.count == 0)) continue;
    const int n = ranksOf(s.comm, n_world), me = rankIn(s.comm, rank);
    const auto& type = nccl::kDatatypes[s.datatype];
    ExpectedOp op{s.comm, f.shape != Shape::kColl, std::string(f.func), "", std::string(type.name), s.stream,
                  s.count, s.count * type.size, seq[{s.comm, std::string(f.func)}]++, 0, s.root_or_peer};
    auto piece = [&](bool is_recv, int peer, bool of_call) {
      ExpectedOp p = op;
      p.func = is_recv ? "Recv" : "Send";
      p.parent = of_call ? std::string(f.func) : "";
      p.root_or_peer = peer;
      p.op_index = p2p_index[{s.comm, is_recv, peer}]++;
      out.push_back(p);
    };
    if (f.shape == Shape::kColl) {
      op.op_index = coll_index[s.comm]++;
      out.push_back(op);
    } else if (f.shape == Shape::kP2p) {
      piece(f.func == "Recv", ((me + s.root_or_peer) % n + n) % n, false);
    } else {
      const bool all = f.func == "AlltoAll", gather = f.func == "Gather";
      for (int r = 0; r < n; ++r) {
        if (all || (!gather && me == s.root_or_peer)) piece(false, r, true);
        if (all || (gather && me == s.root_or_peer)) piece(true, r, true);
      }
      if (!all) piece(!gather, s.root_or_peer, true);
    }
  }
  return out;
}

// Which face records a role's ops, as the test expects it.
enum class Recorder { kWrapper, kPlugin };

// Matches every recorded op to exactly one expected op (by stream, func and peer) and
// checks its fields; returns the comm id the records of each role carry.
std::map<CommRole, uint64_t> checkOps(const Trace& t, const std::vector<ExpectedOp>& expected,
                                      const std::function<Recorder(const ExpectedOp&)>& recorder) {
  std::map<CommRole, std::set<uint64_t>> ids;
  size_t colls = 0, p2ps = 0;
  for (const ExpectedOp& e : expected) {
    const std::string what = e.func + " on stream " + std::to_string(e.stream) + " peer/root " +
                             std::to_string(e.root_or_peer);
    const bool plugin = recorder(e) == Recorder::kPlugin;
    if (!e.is_p2p) {
      ++colls;
      std::vector<const Coll*> found;
      for (const Coll& c : t.colls) {
        if (c.r.stream == e.stream) found.push_back(&c);
      }
      EXPECT_EQ(found.size(), 1u) << what << " must be recorded exactly once";
      if (found.empty()) continue;
      const Coll& c = *found[0];
      EXPECT_EQ(c.func, e.func) << what;
      EXPECT_EQ(c.r.count, e.count) << what;
      EXPECT_EQ(c.r.bytes, e.bytes) << what;
      // The plugin keeps NCCL's descriptor names ("Unknown" for ncclUint8); the wrapper knows the type.
      EXPECT_EQ(c.datatype, plugin ? std::string(nccl::findDatatype(e.datatype)->descr_name) : e.datatype) << what;
      EXPECT_EQ(c.r.root, e.root_or_peer) << what;
      EXPECT_EQ(c.r.seq, e.seq) << what;
      EXPECT_EQ(c.r.op_index, e.op_index) << what;
      EXPECT_EQ(c.algo, plugin ? "RING" : "") << what << ": recorded by the " << (plugin ? "plugin" : "wrapper");
      EXPECT_GT(c.r.cpu_start_ns, 0u) << what;
      EXPECT_GE(c.r.cpu_end_ns, c.r.cpu_start_ns) << what;
      if (!plugin) {
        EXPECT_EQ(c.r.gpu_start_ns + c.r.gpu_end_ns, 0u) << what;
      }
      ids[e.role].insert(c.r.comm_id);
    } else {
      ++p2ps;
      std::vector<const P2p*> found;
      for (const P2p& p : t.p2ps) {
        if (p.r.stream == e.stream && p.func == e.func && p.r.peer == e.root_or_peer) found.push_back(&p);
      }
      EXPECT_EQ(found.size(), 1u) << what << " must be recorded exactly once";
      if (found.empty()) continue;
      const P2p& p = *found[0];
      EXPECT_EQ(p.r.count, e.count) << what;
      EXPECT_EQ(p.r.bytes, e.bytes) << what;
      EXPECT_EQ(p.datatype, e.datatype) << what;
      EXPECT_EQ(p.parent, e.parent) << what;
      EXPECT_EQ(p.r.op_index, e.op_index) << what;
      EXPECT_GT(p.r.cpu_start_ns, 0u) << what;
      EXPECT_GE(p.r.cpu_end_ns, p.r.cpu_start_ns) << what;
      ids[e.role].insert(p.r.comm_id);
    }
  }
  EXPECT_EQ(t.colls.size(), colls) << "no collective recorded twice or out of nowhere";
  EXPECT_EQ(t.p2ps.size(), p2ps) << "no send or receive recorded twice or out of nowhere";
  std::map<CommRole, uint64_t> id_of;
  for (const auto& [role, set] : ids) {
    EXPECT_EQ(set.size(), 1u) << "the records of one communicator carry one comm id";
    if (!set.empty()) id_of[role] = *set.begin();
  }
  return id_of;
}

uint64_t ourId(const std::string& seed) {
  const na::UniqueId id = uniqueIdOf(seed);
  return interpose::commIdOfUniqueId(id.internal, sizeof id.internal);
}
std::string soloSeed(const std::string& seed, int rank) { return seed + "-solo-" + std::to_string(rank); }

void expectInfo(const CommInfo& c, int n_ranks, int rank, int global_rank, int device) {
  EXPECT_EQ(c.r.n_ranks, n_ranks);
  EXPECT_EQ(c.r.rank, rank);
  EXPECT_EQ(c.r.global_rank, global_rank);
  EXPECT_EQ(c.r.cuda_device, device);
}

// ---- the tests ----

TEST(NcclWrappersTest, WithoutThePluginEveryOpIsRecordedOnceWithItsArguments) {
  const std::string seed = "job-without-plugin";
  std::map<CommRole, uint64_t> ids_of_rank[2];
  for (int rank : {0, 1}) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    const ChildRun run = runChild("scenario", rank, 2, seed);
    const Trace& t = run.trace;
    const auto ids = checkOps(t, expectedOps(rank, 2), [](const ExpectedOp&) { return Recorder::kWrapper; });
    ids_of_rank[rank] = ids;
    const uint64_t world = ids.at(CommRole::kWorld), split = ids.at(CommRole::kSplit), solo = ids.at(CommRole::kSolo);
    EXPECT_EQ(world, ourId(seed)) << "the world's id is the hash of its unique id";
    EXPECT_EQ(split, interpose::commIdOfSplit(world, 0, commtrace::testing::kSplitColor));
    EXPECT_EQ(solo, ourId(soloSeed(seed, rank)));

    // One CommInfo per communicator: what NCCL answered, and the process's world rank.
    ASSERT_EQ(t.infos.size(), 3u);
    ASSERT_EQ(t.infosOf(world).size(), 1u);
    expectInfo(*t.infosOf(world)[0], 2, rank, rank, deviceOf(rank));
    ASSERT_EQ(t.infosOf(split).size(), 1u);
    expectInfo(*t.infosOf(split)[0], 2, rank, rank, deviceOf(rank));
    ASSERT_EQ(t.infosOf(solo).size(), 1u);
    expectInfo(*t.infosOf(solo)[0], 1, 0, rank, deviceOf(rank));
    EXPECT_EQ(t.header.rank(), rank) << "the world communicator's rank reaches the file header";
    EXPECT_EQ(t.header.world_size(), 2);

    // Creation and destruction spans, and one span per outermost group of the user's.
    std::multiset<uint64_t> created, ended;
    for (const Span* s : t.spansNamed("ncclCommInitRank")) created.insert(s->r.comm_id);
    EXPECT_EQ(created, (std::multiset<uint64_t>{world, solo}));
    const auto splits = t.spansNamed("ncclCommSplit");
    ASSERT_EQ(splits.size(), 2u);
    EXPECT_TRUE(splits[0]->r.comm_id == split || splits[1]->r.comm_id == split);
    for (const Span* s : t.spansNamed("ncclCommDestroy")) ended.insert(s->r.comm_id);
    EXPECT_EQ(ended, (std::multiset<uint64_t>{world, split, solo}));
    ASSERT_EQ(t.spansNamed("ncclCommFinalize").size(), 1u);
    EXPECT_EQ(t.spansNamed("ncclCommFinalize")[0]->r.comm_id, split);
    const auto groups = t.spansNamed("ncclGroupEnd");
    EXPECT_EQ(groups.size(), 3u) << "NCCL's own groups (inside ncclSend) and inner user groups have no span";
    for (const Span* g : groups) EXPECT_EQ(g->r.arg, 1u);
    EXPECT_TRUE(t.spansNamed("ncclGroupStart").empty());
    for (const Span& s : t.spans) {
      EXPECT_EQ(s.r.result, 0) << s.name;
      EXPECT_GE(s.r.cpu_end_ns, s.r.cpu_start_ns) << s.name;
    }
    EXPECT_EQ(t.spans.size(), 2u + 2u + 1u + 3u + 3u) << "inits, splits, finalize, destroys, groups";
  }
  EXPECT_EQ(ids_of_rank[0].at(CommRole::kWorld), ids_of_rank[1].at(CommRole::kWorld)) << "same unique id, same id";
  EXPECT_EQ(ids_of_rank[0].at(CommRole::kSplit), ids_of_rank[1].at(CommRole::kSplit)) << "same split, same id";
  EXPECT_NE(ids_of_rank[0].at(CommRole::kSolo), ids_of_rank[1].at(CommRole::kSolo));
}

// Records whose comm id no CommInfo of the file names would be orphans in the report.
void expectEveryRecordIdHasItsCommInfo(const Trace& t) {
  std::set<uint64_t> info_ids;
  for (const CommInfo& c : t.infos) info_ids.insert(c.r.comm_id);
  for (const Coll& c : t.colls) EXPECT_TRUE(info_ids.count(c.r.comm_id)) << c.func;
  for (const P2p& p : t.p2ps) EXPECT_TRUE(info_ids.count(p.r.comm_id)) << p.func;
}

TEST(NcclWrappersTest, WithThePluginEachOpIsRecordedOnceAndSingleRankOpsByTheWrapper) {
  const std::string seed = "job-with-plugin";
  uint64_t world_ids[2] = {}, split_ids[2] = {};
  for (int rank : {0, 1}) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    const ChildRun run =
        runChild("scenario", rank, 2, seed, {{"FAKE_NCCL_PLUGIN", "5"}, {"NCCL_PROFILER_PLUGIN", kLibrary}});
    const Trace& t = run.trace;
    // NCCL gives the plugin no Coll/P2p event on a single-rank communicator.
    const auto ids = checkOps(t, expectedOps(rank, 2), [](const ExpectedOp& e) {
      return e.role == CommRole::kSolo ? Recorder::kWrapper : Recorder::kPlugin;
    });
    const uint64_t world = ids.at(CommRole::kWorld), split = ids.at(CommRole::kSplit), solo = ids.at(CommRole::kSolo);
    world_ids[rank] = world;
    split_ids[rank] = split;
    EXPECT_NE(world, ourId(seed)) << "the plugin's records carry NCCL's comm id";
    EXPECT_NE(solo, ourId(soloSeed(seed, rank))) << "the wrapper adopts the plugin's id once it has seen it";
    // The plugin's CommInfo (with the global rank every face shares), plus ours for the same
    // id with what only the API knows (the CUDA device).
    for (const auto& [comm, n, comm_rank] : {std::tuple{world, 2, rank}, {split, 2, rank}, {solo, 1, 0}}) {
      const auto infos = t.infosOf(comm);
      ASSERT_EQ(infos.size(), 2u);
      const CommInfo* plugin = infos[0]->name == "fake" ? infos[0] : infos[1];
      const CommInfo* ours = infos[0]->name == "fake" ? infos[1] : infos[0];
      expectInfo(*plugin, n, comm_rank, rank, -1);  // the rank NCCL gave the wrapper
      expectInfo(*ours, n, comm_rank, rank, deviceOf(rank));
    }
    EXPECT_EQ(t.infos.size(), 6u) << "no CommInfo under our own ids: no record carries them";
    expectEveryRecordIdHasItsCommInfo(t);
  }
  EXPECT_EQ(world_ids[0], world_ids[1]);
  EXPECT_EQ(split_ids[0], split_ids[1]);
}

TEST(NcclWrappersTest, CopyEngineCollectivesTheNcclPluginNeverSeesAreRecordedByTheWrapper) {
  const ChildRun run = runChild("scenario", 0, 2, "job-ce",
                           {{"FAKE_NCCL_PLUGIN", "5"}, {"NCCL_PROFILER_PLUGIN", kLibrary},
                            {"FAKE_NCCL_CE_FUNCS", "AllGather"}});
  auto recorder = [](const ExpectedOp& e) {
    return e.role == CommRole::kSolo || e.func == "AllGather" ? Recorder::kWrapper : Recorder::kPlugin;
  };
  // The plugin numbers the collectives it sees; the wrapper numbers every collective call
  // (it cannot know the plugin's count), so on a communicator both record the indices of
  // the two faces are apart. Collectives are matched across ranks by (comm, func, seq).
  std::vector<ExpectedOp> expected = expectedOps(0, 2);
  std::map<CommRole, uint64_t> plugin_index;
  for (ExpectedOp& e : expected) {
    if (!e.is_p2p && recorder(e) == Recorder::kPlugin) e.op_index = plugin_index[e.role]++;
  }
  const auto ids = checkOps(run.trace, expected, recorder);
  // The AllGathers carry the id the plugin's records of the same communicator carry.
  EXPECT_NE(ids.at(CommRole::kWorld), ourId("job-ce"));
  expectEveryRecordIdHasItsCommInfo(run.trace);
}

TEST(NcclWrappersTest, AV4PluginRecordsMultiRankOpsAndTheWrapperTheRest) {
  const std::string seed = "job-v4";
  const ChildRun run =
      runChild("scenario", 1, 2, seed, {{"FAKE_NCCL_PLUGIN", "4"}, {"NCCL_PROFILER_PLUGIN", kLibrary}});
  const Trace& t = run.trace;
  // v4 has no API events: its records carry no stream, so only the counts identify them.
  std::vector<ExpectedOp> solo_ops, other_ops;
  for (const ExpectedOp& e : expectedOps(1, 2)) (e.role == CommRole::kSolo ? solo_ops : other_ops).push_back(e);
  size_t plugin_colls = 0, plugin_p2ps = 0;
  for (const ExpectedOp& e : other_ops) (e.is_p2p ? plugin_p2ps : plugin_colls)++;
  Trace solo_part, plugin_part;
  for (const Coll& c : t.colls) (c.algo.empty() ? solo_part : plugin_part).colls.push_back(c);
  for (const P2p& p : t.p2ps) (p.r.stream != 0 ? solo_part : plugin_part).p2ps.push_back(p);
  EXPECT_EQ(plugin_part.colls.size(), plugin_colls);
  EXPECT_EQ(plugin_part.p2ps.size(), plugin_p2ps);
  const auto ids = checkOps(solo_part, solo_ops, [](const ExpectedOp&) { return Recorder::kWrapper; });
  EXPECT_EQ(ids.at(CommRole::kSolo), ourId(soloSeed(seed, 1))) << "no API event, so no plugin id to learn";
  ASSERT_EQ(t.infosOf(ids.at(CommRole::kSolo)).size(), 1u);
  expectInfo(*t.infosOf(ids.at(CommRole::kSolo))[0], 1, 0, 1, deviceOf(1));
  expectEveryRecordIdHasItsCommInfo(t);
}

TEST(NcclWrappersTest, ResultsAreForwardedUnchangedAndFailedCallsAreNoOps) {
  for (const char* forced : {"5", "3", "0"}) {
    SCOPED_TRACE(std::string("FAKE_NCCL_RESULT=") + forced);
    const ChildRun run = runChild("results", 0, 2, "job-results", {{"FAKE_NCCL_RESULT", forced}});
    const std::vector<std::string> lines = testutil::linesOf(run.program.out);
    size_t world_steps = 0;
    for (const ScenarioStep& s : scenarioSteps()) world_steps += s.comm == CommRole::kWorld;
    ASSERT_EQ(lines.size(), world_steps);
    std::map<std::string, size_t> failed_calls;
    for (const std::string& line : lines) {
      char api[64];
      int wrapped = -1, direct = -1;
      ASSERT_EQ(std::sscanf(line.c_str(), "%63s %d %d", api, &wrapped, &direct), 3) << line;
      EXPECT_EQ(wrapped, direct) << line;
      EXPECT_EQ(wrapped, std::atoi(forced)) << line;
      if (wrapped != 0) ++failed_calls[api];
    }
    const Trace& t = run.trace;
    if (std::string(forced) != "0") {
      EXPECT_TRUE(t.colls.empty() && t.p2ps.empty()) << "a call NCCL refused is no op";
      // Group spans also come from the direct calls (the fake's pncclSend groups itself
      // through the public, wrapped, ncclGroupStart/End), so only ops are counted.
      std::map<std::string, size_t> failed_spans;
      for (const Span& s : t.spans) {
        if (s.name == "ncclCommInitRank" || s.name == "ncclCommDestroy") continue;
        EXPECT_EQ(s.r.result, std::atoi(forced)) << s.name;
        if (s.name != "ncclGroupStart" && s.name != "ncclGroupEnd") ++failed_spans[s.name];
      }
      failed_calls.erase("ncclGroupStart");
      failed_calls.erase("ncclGroupEnd");
      // The direct pncclBcast calls the public ncclBroadcast, as NCCL does: from outside
      // any wrapper, so that call is a wrapped one.
      failed_calls["ncclBroadcast"] += failed_calls["ncclBcast"];
      EXPECT_EQ(failed_spans, failed_calls) << "one span with NCCL's result per failed wrapped op";
    } else {
      EXPECT_FALSE(t.colls.empty());
    }
  }
}

TEST(NcclWrappersTest, ANonBlockingCommunicatorIsAskedAboutAtItsFirstOp) {
  const ChildRun run = runChild("nonblocking", 1, 4, "job-nonblocking", {{"FAKE_NCCL_INIT_RESULT", "7"}});
  const Trace& t = run.trace;
  ASSERT_EQ(t.colls.size(), 2u);
  EXPECT_EQ(t.colls[0].r.seq, 0u);
  EXPECT_EQ(t.colls[1].r.seq, 1u);
  ASSERT_EQ(t.p2ps.size(), 1u);
  EXPECT_EQ(t.p2ps[0].r.peer, 2);
  const uint64_t id = ourId("job-nonblocking");
  EXPECT_EQ(t.colls[0].r.comm_id, id);
  ASSERT_EQ(t.infosOf(id).size(), 1u);
  expectInfo(*t.infosOf(id)[0], 4, 1, 1, deviceOf(1));
  ASSERT_EQ(t.spansNamed("ncclCommInitRankConfig").size(), 1u);
  EXPECT_EQ(t.spansNamed("ncclCommInitRankConfig")[0]->r.result, na::kInProgress);
  ASSERT_EQ(t.spansNamed("ncclCommAbort").size(), 1u);
  EXPECT_EQ(t.spansNamed("ncclCommAbort")[0]->r.comm_id, id);
}

TEST(NcclWrappersTest, ScalableInitShrinkAndInitAllGiveConsistentIds) {
  uint64_t shrunk_ids[2] = {};
  for (int rank : {0, 1}) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    const ChildRun run = runChild("creation", rank, 2, "job-creation");
    const Trace& t = run.trace;
    const uint64_t scalable = ourId("job-creation");  // the first unique id names it
    ASSERT_EQ(t.infosOf(scalable).size(), 1u);
    expectInfo(*t.infosOf(scalable)[0], 2, rank, rank, deviceOf(rank));
    const uint64_t shrunk = interpose::commIdOfShrink(scalable, 0);
    shrunk_ids[rank] = shrunk;
    ASSERT_EQ(t.infosOf(shrunk).size(), 1u);
    EXPECT_EQ(t.infosOf(shrunk)[0]->r.n_ranks, 1);
    ASSERT_EQ(t.spansNamed("ncclCommShrink").size(), 1u);
    EXPECT_EQ(t.spansNamed("ncclCommShrink")[0]->r.comm_id, shrunk);
    // ncclCommInitAll: one communicator whose three ranks live here, one id for all.
    const auto init_all = t.spansNamed("ncclCommInitAll");
    ASSERT_EQ(init_all.size(), 1u);
    const auto clique = t.infosOf(init_all[0]->r.comm_id);
    ASSERT_EQ(clique.size(), 3u);
    std::set<std::pair<int, int>> rank_device;
    for (const CommInfo* c : clique) {
      EXPECT_EQ(c->r.n_ranks, 3);
      EXPECT_EQ(c->r.global_rank, -1) << "the process's world was the scalable communicator";
      rank_device.insert({c->r.rank, c->r.cuda_device});
    }
    EXPECT_EQ(rank_device, (std::set<std::pair<int, int>>{{0, 4}, {1, 5}, {2, 6}}));
    EXPECT_EQ(t.colls.size(), 5u);
    EXPECT_EQ(t.spansNamed("ncclGroupEnd").size(), 1u) << "InitAll's own groups are NCCL's";
  }
  EXPECT_EQ(shrunk_ids[0], shrunk_ids[1]);
}

// This test binary links no NCCL: re-run under the preload, its calls reach wrappers with
// nothing behind them.
TEST(NcclWrappersWithoutNccl, Child) {
  if (std::getenv("COMMTRACE_TEST_NO_NCCL_CHILD") == nullptr) GTEST_SKIP() << "runs as NcclWrappersTest's child";
  auto* all_reduce = reinterpret_cast<decltype(&ncclAllReduce)>(dlsym(RTLD_DEFAULT, "ncclAllReduce"));
  auto* group_end = reinterpret_cast<decltype(&ncclGroupEnd)>(dlsym(RTLD_DEFAULT, "ncclGroupEnd"));
  if (all_reduce == nullptr || group_end == nullptr) std::exit(10);
  const int first = all_reduce(nullptr, nullptr, 1, na::kFloat32, 0, nullptr, nullptr);
  const int second = all_reduce(nullptr, nullptr, 1, na::kFloat32, 0, nullptr, nullptr);
  std::printf("%d %d %d\n", first, second, group_end());
  std::fflush(stdout);
  std::exit(0);
}

TEST(NcclWrappersTest, WithoutNcclAWrapperAnswersInvalidUsageAndSaysSoOnce) {
  testutil::TempDir dir;
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const testutil::ProgramResult r =
      testutil::runProgram({self, "--gtest_filter=NcclWrappersWithoutNccl.Child"}, dir.path(),
                           {{"LD_PRELOAD", kLibrary}, {"COMMTRACE_DIR", dir.path()},
                            {"COMMTRACE_TEST_NO_NCCL_CHILD", "1"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("5 5 5\n"), std::string::npos) << r.out;
  size_t lines = 0;
  for (const std::string& line : testutil::linesOf(r.err)) {
    if (line.rfind("commtrace: ncclAllReduce: no loaded NCCL defines it", 0) == 0) ++lines;
    EXPECT_EQ(line.find("ncclGroupEnd"), std::string::npos) << "one line per process, not per symbol: " << line;
  }
  EXPECT_EQ(lines, 1u) << r.err;
}

TEST(NcclWrappersTest, WithRecordingOffTheWrappersOnlyForward) {
  const ChildRun run = runChild("scenario", 0, 2, "job-off", {{"COMMTRACE_NCCL_API", "0"}});
  EXPECT_TRUE(run.trace.colls.empty() && run.trace.spans.empty() && run.trace.infos.empty());
}

}  // namespace
