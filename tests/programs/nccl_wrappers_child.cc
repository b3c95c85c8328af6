// A program using NCCL the way an application does, linked against the fake libnccl.so.2
// and run by nccl_wrappers_test under LD_PRELOAD=libcommtrace.so, so its calls go through
// the wrappers. One mode per run:
//
//   nccl_wrappers_child scenario <rank> <n_ranks> <seed>
//       world = InitRank(n_ranks, id(seed), rank); split = Split(world, kSplitColor);
//       a NOCOLOR split; solo = InitRank(1, id(seed-solo-rank), 0); scenarioSteps();
//       Finalize + Destroy all.
//   nccl_wrappers_child results <rank> <n_ranks> <seed>
//       the world's steps through the wrappers, then the same calls to the pnccl twins
//       directly: prints "<api> <wrapped result> <direct result>" per call.
//   nccl_wrappers_child errors <rank> <n_ranks> <seed>
//       the same comparison for calls the real libnccl.so.2 refuses without a GPU:
//       creation, and every op and destroy on a NULL communicator.
//   nccl_wrappers_child nonblocking <rank> <n_ranks> <seed>
//       InitRankConfig answering ncclInProgress (FAKE_NCCL_INIT_RESULT=7), two
//       AllReduces and a Send, Abort.
//   nccl_wrappers_child creation <rank> <n_ranks> <seed>
//       InitRankScalable(ids: seed, seed-2), one AllReduce; Shrink excluding one rank, one
//       AllReduce; InitAll of three devices 4, 5, 6 with a grouped AllReduce on each.
//
// Exits 0 when every call answered as expected, else prints the first surprise and exits 1.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "interpose/nccl_api.h"
#include "tests/programs/nccl_wrappers_scenario.h"

namespace {

using namespace commtrace::nccl_api;
using commtrace::testing::CommRole;
using commtrace::testing::ScenarioStep;
using commtrace::testing::uniqueIdOf;

int g_rank = 0, g_n_ranks = 1;

bool expect(std::string_view what, Result got, Result want) {
  if (got == want) return true;
  std::fprintf(stderr, "%.*s returned %d, expected %d\n", static_cast<int>(what.size()), what.data(), got, want);
  return false;
}

// The wrapped entry point, or its pncclX twin in the fake library (no wrapper on the way).
template <class Fn>
Fn* pick(Fn* wrapped, const char* name, bool direct) {
  if (!direct) return wrapped;
  const std::string twin = std::string("p") + name;
  return reinterpret_cast<Fn*>(dlsym(RTLD_DEFAULT, twin.c_str()));
}

#define CT_CALL(name, direct) pick(&name, #name, direct)

int peerOf(CommHandle comm, int offset) {
  int n = 1, me = 0;
  ncclCommCount(comm, &n);
  ncclCommUserRank(comm, &me);
  return ((me + offset) % n + n) % n;
}

// One step of the scenario on comm.
Result run(const ScenarioStep& s, CommHandle comm, bool direct = false) {
  static char buffer[1 << 16];
  auto* stream = reinterpret_cast<Stream>(s.stream);
  const auto type = static_cast<DataType>(s.datatype);
  const std::string_view api = s.api;
  if (api == "ncclAllReduce") return CT_CALL(ncclAllReduce, direct)(buffer, buffer, s.count, type, 0, comm, stream);
  if (api == "ncclBroadcast") {
    return CT_CALL(ncclBroadcast, direct)(buffer, buffer, s.count, type, s.root_or_peer, comm, stream);
  }
  if (api == "ncclBcast") return CT_CALL(ncclBcast, direct)(buffer, s.count, type, s.root_or_peer, comm, stream);
  if (api == "ncclReduce") {
    return CT_CALL(ncclReduce, direct)(buffer, buffer, s.count, type, 0, s.root_or_peer, comm, stream);
  }
  if (api == "ncclAllGather") return CT_CALL(ncclAllGather, direct)(buffer, buffer, s.count, type, comm, stream);
  if (api == "ncclReduceScatter") {
    return CT_CALL(ncclReduceScatter, direct)(buffer, buffer, s.count, type, 0, comm, stream);
  }
  if (api == "ncclAlltoAll") return CT_CALL(ncclAlltoAll, direct)(buffer, buffer, s.count, type, comm, stream);
  if (api == "ncclGather") {
    return CT_CALL(ncclGather, direct)(buffer, buffer, s.count, type, s.root_or_peer, comm, stream);
  }
  if (api == "ncclScatter") {
    return CT_CALL(ncclScatter, direct)(buffer, buffer, s.count, type, s.root_or_peer, comm, stream);
  }
  if (api == "ncclSend") {
    return CT_CALL(ncclSend, direct)(buffer, s.count, type, peerOf(comm, s.root_or_peer), comm, stream);
  }
  if (api == "ncclRecv") {
    return CT_CALL(ncclRecv, direct)(buffer, s.count, type, peerOf(comm, s.root_or_peer), comm, stream);
  }
  if (api == "ncclGroupStart") return CT_CALL(ncclGroupStart, direct)();
  if (api == "ncclGroupEnd") return CT_CALL(ncclGroupEnd, direct)();
  std::fprintf(stderr, "unknown step %s\n", std::string(api).c_str());
  return kInternalError;
}

std::string soloSeed(const std::string& seed) { return seed + "-solo-" + std::to_string(g_rank); }

int scenario(const std::string& seed) {
  CommHandle world = nullptr, split = nullptr, none = reinterpret_cast<CommHandle>(0x1), solo = nullptr;
  if (!expect("InitRank", ncclCommInitRank(&world, g_n_ranks, uniqueIdOf(seed), g_rank), kSuccess)) return 1;
  if (!expect("Split", ncclCommSplit(world, commtrace::testing::kSplitColor, g_rank, &split, nullptr), kSuccess)) {
    return 1;
  }
  if (!expect("Split NOCOLOR", ncclCommSplit(world, kSplitNoColor, 0, &none, nullptr), kSuccess) || none) return 1;
  if (!expect("InitRank solo", ncclCommInitRank(&solo, 1, uniqueIdOf(soloSeed(seed)), 0), kSuccess)) return 1;
  for (const ScenarioStep& s : commtrace::testing::scenarioSteps()) {
    CommHandle comm = s.comm == CommRole::kWorld ? world : s.comm == CommRole::kSplit ? split : solo;
    if (!expect(s.api, run(s, comm), kSuccess)) return 1;
  }
  if (!expect("Finalize", ncclCommFinalize(split), kSuccess)) return 1;
  for (CommHandle comm : {split, solo, world}) {
    if (!expect("Destroy", ncclCommDestroy(comm), kSuccess)) return 1;
  }
  return 0;
}

// A list of calls made through the wrappers, then the same list made directly (so that a
// group's state in NCCL never mixes the two): "<api> <wrapped result> <direct result>".
struct NamedCall {
  std::string api;
  std::function<Result(bool direct)> call;
};

void compareResults(const std::vector<NamedCall>& calls) {
  std::vector<Result> wrapped, direct;
  for (const NamedCall& c : calls) wrapped.push_back(c.call(false));
  for (const NamedCall& c : calls) direct.push_back(c.call(true));
  for (size_t i = 0; i < calls.size(); ++i) std::printf("%s %d %d\n", calls[i].api.c_str(), wrapped[i], direct[i]);
}

std::vector<NamedCall> stepCalls(CommHandle comm) {
  std::vector<NamedCall> calls;
  for (const ScenarioStep& s : commtrace::testing::scenarioSteps()) {
    if (s.comm != CommRole::kWorld) continue;
    calls.push_back({std::string(s.api), [&s, comm](bool direct) { return run(s, comm, direct); }});
  }
  return calls;
}

int results(const std::string& seed) {
  CommHandle comm = nullptr;
  if (!expect("InitRank", ncclCommInitRank(&comm, g_n_ranks, uniqueIdOf(seed), g_rank), kSuccess)) return 1;
  compareResults(stepCalls(comm));
  ncclCommDestroy(comm);
  return 0;
}

// The real libnccl.so.2 without a GPU: communicator creation fails (no CUDA driver) and
// every op on a NULL communicator is refused.
int errors(const std::string& seed) {
  static CommHandle out = nullptr;
  static UniqueId id = uniqueIdOf(seed);
  static const int devices[1] = {0};
  std::vector<NamedCall> calls = {
      {"ncclCommInitRank", [](bool d) { return CT_CALL(ncclCommInitRank, d)(&out, 1, id, 0); }},
      {"ncclCommInitRankConfig", [](bool d) { return CT_CALL(ncclCommInitRankConfig, d)(&out, 1, id, 0, nullptr); }},
      {"ncclCommInitRankScalable",
       [](bool d) { return CT_CALL(ncclCommInitRankScalable, d)(&out, 1, 0, 1, &id, nullptr); }},
      {"ncclCommInitAll", [](bool d) { return CT_CALL(ncclCommInitAll, d)(&out, 1, devices); }},
      {"ncclCommSplit", [](bool d) { return CT_CALL(ncclCommSplit, d)(nullptr, 0, 0, &out, nullptr); }},
      {"ncclCommFinalize", [](bool d) { return CT_CALL(ncclCommFinalize, d)(nullptr); }},
      {"ncclCommDestroy", [](bool d) { return CT_CALL(ncclCommDestroy, d)(nullptr); }},
      {"ncclCommAbort", [](bool d) { return CT_CALL(ncclCommAbort, d)(nullptr); }},
  };
  for (NamedCall& c : stepCalls(nullptr)) calls.push_back(std::move(c));
  compareResults(calls);
  return 0;
}

int nonblocking(const std::string& seed) {
  CommHandle comm = nullptr;
  if (!expect("InitRankConfig", ncclCommInitRankConfig(&comm, g_n_ranks, uniqueIdOf(seed), g_rank, nullptr),
              kInProgress)) {
    return 1;
  }
  const ScenarioStep steps[] = {{"ncclAllReduce", CommRole::kWorld, 10, kFloat32, 0, 0x10},
                                {"ncclAllReduce", CommRole::kWorld, 11, kFloat32, 0, 0x11},
                                {"ncclSend", CommRole::kWorld, 12, kFloat32, +1, 0x12}};
  for (const ScenarioStep& s : steps) {
    if (!expect(s.api, run(s, comm), kSuccess)) return 1;
  }
  return expect("Abort", ncclCommAbort(comm), kSuccess) ? 0 : 1;
}

int creation(const std::string& seed) {
  const ScenarioStep all_reduce{"ncclAllReduce", CommRole::kWorld, 20, kFloat32, 0, 0x20};
  UniqueId ids[2] = {uniqueIdOf(seed), uniqueIdOf(seed + "-2")};
  CommHandle scalable = nullptr, shrunk = nullptr;
  if (!expect("InitRankScalable", ncclCommInitRankScalable(&scalable, g_n_ranks, g_rank, 2, ids, nullptr),
              kSuccess)) {
    return 1;
  }
  if (!expect("AllReduce", run(all_reduce, scalable), kSuccess)) return 1;
  int excluded[] = {g_n_ranks - 1};
  if (!expect("Shrink", ncclCommShrink(scalable, excluded, 1, &shrunk, nullptr, 0), kSuccess)) return 1;
  if (!expect("AllReduce", run(all_reduce, shrunk), kSuccess)) return 1;
  CommHandle clique[3] = {};
  const int devices[3] = {4, 5, 6};
  if (!expect("InitAll", ncclCommInitAll(clique, 3, devices), kSuccess)) return 1;
  ncclGroupStart();
  for (CommHandle comm : clique) {
    if (!expect("AllReduce", run(all_reduce, comm), kSuccess)) return 1;
  }
  ncclGroupEnd();
  for (CommHandle comm : {clique[0], clique[1], clique[2], shrunk, scalable}) ncclCommDestroy(comm);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s scenario|results|errors|nonblocking|creation RANK N_RANKS SEED\n", argv[0]);
    return 2;
  }
  const std::string mode = argv[1], seed = argv[4];
  g_rank = std::atoi(argv[2]);
  g_n_ranks = std::atoi(argv[3]);
  if (mode == "scenario") return scenario(seed);
  if (mode == "results") return results(seed);
  if (mode == "nonblocking") return nonblocking(seed);
  if (mode == "creation") return creation(seed);
  if (mode == "errors") return errors(seed);
  return 2;
}
