#include "tools/report/analyses/op_metrics.h"

#include <algorithm>
#include <array>

namespace commtrace::report {
namespace {

enum class BusFactor { kOne, kNMinusOneOverN, kTwoNMinusOneOverN };

struct FuncFactors {
  std::string_view func;
  bool per_rank_count;  // the API count is per rank: S = payload x n
  BusFactor factor;
  bool synchronizing;
};

// nccl-tests' table. Funcs not listed (Send, Recv, SendRecv, unknown) count S = payload, factor 1.
constexpr std::array<FuncFactors, 8> kFuncs{{
    {"AllReduce", false, BusFactor::kTwoNMinusOneOverN, true},
    {"AllGather", true, BusFactor::kNMinusOneOverN, true},
    {"ReduceScatter", true, BusFactor::kNMinusOneOverN, true},
    {"AlltoAll", true, BusFactor::kNMinusOneOverN, false},
    {"Gather", true, BusFactor::kNMinusOneOverN, false},
    {"Scatter", true, BusFactor::kNMinusOneOverN, false},
    {"Broadcast", false, BusFactor::kOne, false},
    {"Reduce", false, BusFactor::kOne, false},
}};

const FuncFactors* factorsOf(std::string_view func) {
  const auto it = std::find_if(kFuncs.begin(), kFuncs.end(), [&](const FuncFactors& f) { return f.func == func; });
  return it == kFuncs.end() ? nullptr : &*it;
}

// The last member to arrive waits for nobody: its GPU duration is the transfer.
uint64_t shortestGpuDuration(const MemberView* members, size_t n) {
  uint64_t shortest = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint64_t d = members[i].gpuDuration();
    if (d != 0 && (shortest == 0 || d < shortest)) shortest = d;
  }
  return shortest;
}

}  // namespace

uint64_t ncclTestsBytes(std::string_view func, uint64_t per_rank_bytes, int n) {
  const FuncFactors* f = factorsOf(func);
  return f != nullptr && f->per_rank_count ? per_rank_bytes * static_cast<uint64_t>(n) : per_rank_bytes;
}

double busBwFactor(std::string_view func, int n) {
  const FuncFactors* f = factorsOf(func);
  if (f == nullptr || n <= 0) return 1.0;
  switch (f->factor) {
    case BusFactor::kTwoNMinusOneOverN: return 2.0 * (n - 1) / n;
    case BusFactor::kNMinusOneOverN: return static_cast<double>(n - 1) / n;
    case BusFactor::kOne: return 1.0;
  }
  return 1.0;
}

bool isSynchronizing(std::string_view func) {
  const FuncFactors* f = factorsOf(func);
  return f != nullptr && f->synchronizing;
}

uint64_t transferNs(const RunModel& run, const CollInstance& c) { return shortestGpuDuration(run.membersOf(c), c.n_members); }

uint64_t transferNs(const P2pCall& call) { return shortestGpuDuration(call.members.data(), call.members.size()); }

uint64_t transferNs(const P2pTransfer& t) {
  const uint64_t s = t.send.gpuDuration(), r = t.recv.gpuDuration();
  if (s == 0 || r == 0) return std::max(s, r);
  return std::min(s, r);
}

}  // namespace commtrace::report
