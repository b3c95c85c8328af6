#include "tools/report/load/step_pattern.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace commtrace::report {
namespace {

// A process's ops: warm-up ops (keys 100, 101), then `steps` steps of keys 0..period-1, each
// op 1 us after the one before it in program order.
std::vector<RankOp> programOf(size_t steps, uint32_t period) {
  std::vector<RankOp> ops;
  for (uint32_t key : {100u, 101u}) ops.push_back({.issue_ns = 1000 * (ops.size() + 1), .op_index = ops.size(), .key = key});
  for (size_t s = 0; s < steps; ++s)
    for (uint32_t k = 0; k < period; ++k) ops.push_back({.issue_ns = 1000 * (ops.size() + 1), .op_index = ops.size(), .key = k});
  return ops;
}

std::vector<uint64_t> issueOrder(const std::vector<RankOp>& ops) {
  std::vector<uint64_t> out;
  for (const RankOp& op : ops) out.push_back(op.issue_ns);
  return out;
}

// The ops come as a file holds them: several rings' runs, each in program order, interleaved
// in flushes of random length; or wholly shuffled. Either way they are put back in program order.
TEST(StepPeriod, OpsInInterleavedRunsOrShuffledComeOutInProgramOrder) {
  std::mt19937 rng(7);
  for (int draw = 0; draw < 50; ++draw) {
    const uint32_t period = 1 + static_cast<uint32_t>(rng() % 9);
    const std::vector<RankOp> program = programOf(40 + rng() % 60, period);
    const size_t rings = 1 + rng() % 4;
    std::vector<std::vector<RankOp>> by_ring(rings);
    for (const RankOp& op : program) by_ring[rng() % rings].push_back(op);
    std::vector<RankOp> file;
    std::vector<size_t> next(rings, 0);
    while (file.size() < program.size()) {
      const size_t r = rng() % rings;
      for (size_t n = 1 + rng() % 20; n > 0 && next[r] < by_ring[r].size(); --n) file.push_back(by_ring[r][next[r]++]);
    }
    if (draw % 5 == 0) std::shuffle(file.begin(), file.end(), rng);
    const StepPeriod steps = stepPeriodOf(file);
    EXPECT_EQ(issueOrder(file), issueOrder(program)) << "draw " << draw;
    EXPECT_EQ(steps.first, 2u) << "draw " << draw << ": after the two warm-up ops";
    EXPECT_EQ(steps.period, period) << "draw " << draw;
  }
}

}  // namespace
}  // namespace commtrace::report
