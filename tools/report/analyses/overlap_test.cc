// The overlap analysis on hand-built runs: unions of communication and compute kernels,
// exposed communication and idle time, the reason given when no compute kernel was recorded,
// and steps from NVTX ranges or from the repeating op pattern.
#include "tools/report/analyses/overlap.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <regex>
#include <tuple>

#include "tests/support/run_model_builder.h"
#include "tools/report/load/phase_keeper.h"

namespace commtrace::report {
namespace {

using testutil::RunModelBuilder;
constexpr uint64_t kBase = 1'790'000'000'000'000'000ull;  // a GPU globaltimer value
constexpr uint64_t kUs = 1000;
constexpr uint64_t kMiB = 1 << 20;

uint64_t at(double us) { return kBase + static_cast<uint64_t>(us * 1000); }

// Two ranks; rank 0: comm kernels [1, 11) and [8, 12) (overlapping: union 11 us) and
// [21, 31); compute [6, 13). Rank 1's kernels are elsewhere and must not mix in.
RunModelBuilder twoRanks(bool with_compute) {
  RunModelBuilder b({"a", "a"});
  const uint32_t comm = b.comm({0, 1}, "world");
  b.coll(comm, "AllReduce", 4 * kMiB, {{at(1), at(11)}, {at(100), at(110)}});
  b.coll(comm, "AllGather", kMiB, {{at(8), at(12)}, {at(111), at(112)}});
  b.coll(comm, "AllReduce", 4 * kMiB, {{at(21), at(31)}, {at(120), at(130)}});
  if (with_compute) {
    b.run.timelines[0] = {.compute = {{at(6), at(13)}}, .has_kernel_records = true};
    b.run.timelines[1] = {.compute = {}, .has_kernel_records = true};
  }
  return b;
}

TEST(Overlap, UnionsKernelsAndSplitsCommunicationIntoOverlappedExposedAndIdle) {
  const std::vector<OverlapRow> rows = computeOverlap(twoRanks(true).run);
  ASSERT_EQ(rows.size(), 2u);
  const OverlapRow& r0 = rows[0];
  EXPECT_EQ(r0.rank, 0);
  ASSERT_TRUE(r0.available) << r0.reason;
  EXPECT_DOUBLE_EQ(r0.comm_us, 21);       // [1, 12) + [21, 31)
  EXPECT_DOUBLE_EQ(r0.overlapped_us, 6);  // [6, 12)
  EXPECT_DOUBLE_EQ(r0.exposed_us, 15);
  EXPECT_DOUBLE_EQ(r0.idle_us, 8);  // span [1, 31) = 30 us, busy [1, 13) + [21, 31) = 22 us
  EXPECT_NEAR(r0.overlap_pct, 100.0 * 6 / 21, 1e-9);

  const OverlapRow& r1 = rows[1];  // recorded kernels, none of them compute
  EXPECT_EQ(r1.rank, 1);
  ASSERT_TRUE(r1.available);
  EXPECT_DOUBLE_EQ(r1.comm_us, 10 + 1 + 10);
  EXPECT_DOUBLE_EQ(r1.overlapped_us, 0);
  EXPECT_DOUBLE_EQ(r1.exposed_us, 21);
  EXPECT_DOUBLE_EQ(r1.idle_us, 30 - 21);
}

TEST(Overlap, WithoutComputeRecordsSaysWhyAndKeepsOnlyCommunicationTime) {
  const std::vector<OverlapRow> rows = computeOverlap(twoRanks(false).run);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_FALSE(rows[0].available);
  EXPECT_EQ(rows[0].reason, "no compute-kernel records: CUPTI was not attached");
  EXPECT_DOUBLE_EQ(rows[0].comm_us, 21);
  EXPECT_DOUBLE_EQ(rows[0].overlap_pct, 0);
  EXPECT_DOUBLE_EQ(rows[0].idle_us, 0);  // not known: writers print the reason instead
}

TEST(Overlap, ProcessWithoutTimedCommunicationIsNotAvailable) {
  RunModelBuilder b({"a"});
  const uint32_t comm = b.comm({0}, "solo");
  b.coll(comm, "AllReduce", kMiB, {{0, 0}});  // cut off before the GPU times
  const std::vector<OverlapRow> rows = computeOverlap(b.run);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_FALSE(rows[0].available);
  EXPECT_EQ(rows[0].reason, "no communication kernel with GPU times recorded");
  EXPECT_DOUBLE_EQ(rows[0].comm_us, 0);
  EXPECT_EQ(rows[0].step_source, "none");
}

// One rank, steps 100 us apart from at(first): AllReduce [0, 10), compute [10, 32),
// AllGather [30, 35) (2 us under compute).
RunModelBuilder steppedRank(int steps, double first = 0) {
  RunModelBuilder b({"a"});
  const uint32_t comm = b.comm({0}, "solo");
  b.run.timelines[0].has_kernel_records = true;
  for (int s = 0; s < steps; ++s) {
    const double t0 = first + 100.0 * s;
    b.coll(comm, "AllReduce", 4 * kMiB, {{at(t0), at(t0 + 10)}});
    b.run.timelines[0].compute.push_back({at(t0 + 10), at(t0 + 32)});
    b.coll(comm, "AllGather", kMiB, {{at(t0 + 30), at(t0 + 35)}});
  }
  return b;
}

TEST(Overlap, StepsInferredFromTheRepeatingOpPattern) {
  const OverlapRow row = computeOverlap(steppedRank(3).run).at(0);
  EXPECT_EQ(row.step_source, "inferred");
  ASSERT_EQ(row.steps.size(), 3u);
  for (int s = 0; s < 3; ++s) {
    EXPECT_EQ(row.steps[s].step, s);
    EXPECT_DOUBLE_EQ(row.steps[s].start_us, 100.0 * s);
    EXPECT_DOUBLE_EQ(row.steps[s].comm_us, 15);
    EXPECT_DOUBLE_EQ(row.steps[s].overlapped_us, 2);
    EXPECT_DOUBLE_EQ(row.steps[s].exposed_us, 13);
  }
  EXPECT_DOUBLE_EQ(row.steps[0].idle_us, 100 - 35);  // a step runs to the next one's first op
  EXPECT_DOUBLE_EQ(row.steps[2].idle_us, 0);         // the last ends with its last op
}

// A long run's steps come as at most kMaxStepPoints stretches of consecutive steps, their
// figures summed, so that the output does not grow with the run.
TEST(Overlap, ALongRunsStepsComeInStretchesWithTheirSums) {
  constexpr int kSteps = 1234;
  const OverlapRow row = computeOverlap(steppedRank(kSteps).run).at(0);
  EXPECT_EQ(row.step_count, kSteps);
  EXPECT_DOUBLE_EQ(row.mean_step_us, 100.0);
  ASSERT_LE(row.steps.size(), OverlapRow::kMaxStepPoints);
  ASSERT_EQ(row.steps.size(), 309u);  // stretches of 4 steps (a power of two); the last holds two
  int next = 0;
  double comm = 0, exposed = 0;
  for (const StepOverlap& s : row.steps) {
    EXPECT_EQ(s.step, next);
    EXPECT_DOUBLE_EQ(s.start_us, 100.0 * s.step);
    next = s.last_step + 1;
    comm += s.comm_us;
    exposed += s.exposed_us;
  }
  EXPECT_EQ(next, kSteps);
  EXPECT_EQ(row.steps.front().last_step, 3);
  EXPECT_DOUBLE_EQ(row.steps.front().comm_us, 4 * 15);
  EXPECT_EQ(row.steps.back().last_step - row.steps.back().step, 1);
  EXPECT_DOUBLE_EQ(comm, 15.0 * kSteps);
  EXPECT_DOUBLE_EQ(exposed, 13.0 * kSteps);
  EXPECT_EQ(row.most_exposed_step.step >= 0, true) << "chosen among single steps";
}

TEST(Overlap, InferredStepsSkipWarmUpOpsAndKeepACutShortLastStep) {
  RunModelBuilder warm = steppedRank(0);
  warm.coll(0, "Broadcast", 4096, {{at(0), at(3)}});  // parameters, once
  RunModelBuilder stepped = steppedRank(3, 50);
  for (const CollInstance& c : stepped.run.collectives) {
    const MemberView& m = stepped.run.membersOf(c)[0];
    warm.coll(0, std::string(stepped.run.name(c.func)), c.bytes, {{m.gpu_start_ns, m.gpu_end_ns}});
  }
  const OverlapRow warm_row = computeOverlap(warm.run).at(0);
  EXPECT_EQ(warm_row.step_source, "inferred");
  ASSERT_EQ(warm_row.steps.size(), 3u);
  EXPECT_DOUBLE_EQ(warm_row.steps[0].start_us, 50);  // the Broadcast at 0 belongs to no step

  RunModelBuilder cut = steppedRank(3);
  cut.coll(0, "AllReduce", 4 * kMiB, {{at(300), at(310)}});  // the run ends mid-step
  const OverlapRow cut_row = computeOverlap(cut.run).at(0);
  EXPECT_EQ(cut_row.step_source, "inferred");
  ASSERT_EQ(cut_row.steps.size(), 4u);
  EXPECT_DOUBLE_EQ(cut_row.steps[3].start_us, 300);
  EXPECT_DOUBLE_EQ(cut_row.steps[3].comm_us, 10);
}

TEST(Overlap, NoStepsWhenNothingRepeats) {
  RunModelBuilder b = steppedRank(1);
  b.coll(0, "Broadcast", 4096, {{at(40), at(41)}});
  const OverlapRow row = computeOverlap(b.run).at(0);
  EXPECT_EQ(row.step_source, "none");
  EXPECT_TRUE(row.steps.empty());
  EXPECT_DOUBLE_EQ(row.comm_us, 16);
}

// steppedRank(3) with NVTX ranges "step N" at depth 0 starting 5 us before each step's first
// op (on the CPU clock, 7 ms behind the GPU's), "fwd"/"bwd" inside them, one "init" before;
// clock_samples: whether the process wrote the samples that map its CPU clock to the GPU's.
OverlapRow overlapWithNvtxSteps(bool clock_samples) {
  RunModelBuilder b = steppedRank(3);
  const uint64_t cpu_base = 7'000'000;
  ProcessTimeline& t = b.run.timelines[0];
  auto cpuAt = [&](double us) { return cpu_base + static_cast<uint64_t>(us * 1000); };
  t.phases.push_back({b.run.names.intern("init"), cpuAt(-50), cpuAt(-10), 0});
  for (int s = 0; s < 3; ++s) {
    const double t0 = 100.0 * s;
    t.phases.push_back({b.run.names.intern("step " + std::to_string(s + 1)), cpuAt(t0 - 5), cpuAt(t0 + 90), 0});
    t.phases.push_back({b.run.names.intern("fwd"), cpuAt(t0), cpuAt(t0 + 20), 1});
    t.phases.push_back({b.run.names.intern("bwd"), cpuAt(t0 + 20), cpuAt(t0 + 40), 1});
  }
  b.run.processes[0].gpu_from_cpu = {.slope = 1.0, .intercept = static_cast<double>(kBase - cpu_base), .valid = clock_samples};
  return computeOverlap(b.run).at(0);
}

TEST(Overlap, StepsFromTheRepeatingTopLevelNvtxRange) {
  const OverlapRow row = overlapWithNvtxSteps(true);
  EXPECT_EQ(row.step_source, "nvtx");
  ASSERT_EQ(row.steps.size(), 3u);
  // A clock map's double result near 1.8e18 ns moves in 256 ns steps.
  constexpr double kMapPrecisionUs = 0.3;
  for (int s = 0; s < 3; ++s) {
    EXPECT_NEAR(row.steps[s].start_us, 100.0 * s - 5, kMapPrecisionUs);
    EXPECT_DOUBLE_EQ(row.steps[s].comm_us, 15);
    EXPECT_DOUBLE_EQ(row.steps[s].overlapped_us, 2);
    EXPECT_NEAR(row.steps[s].idle_us, 95 - 35, kMapPrecisionUs);  // the range's 95 us less 35 us busy
  }
}

// steppedRank(3) on the GPU clock = the CPU clock, with ranges given as (name, depth,
// start us, end us), and the overlap row under rule. The report's loader keeps only the
// ranges that can be steps (PhaseKeeper): the row from those is the row from all of them.
OverlapRow overlapWithRanges(const std::vector<std::tuple<std::string, uint16_t, double, double>>& ranges,
                             const StepRule& rule = {}) {
  RunModelBuilder b = steppedRank(3);
  PhaseKeeper keeper(false, rule.set() ? std::function<bool(std::string_view)>([&](std::string_view n) { return rule.matches(n); }) : nullptr);
  for (const auto& [name, depth, start, end] : ranges) {
    const PhaseSpan span{b.run.names.intern(name), kBase + static_cast<uint64_t>(start * 1000), kBase + static_cast<uint64_t>(end * 1000), depth};
    b.run.timelines[0].phases.push_back(span);
    keeper.add(span, name, "");
  }
  b.run.processes[0].gpu_from_cpu = {.slope = 1.0, .intercept = 0, .valid = true};
  const OverlapRow all = computeOverlap(b.run, rule).at(0);
  b.run.timelines[0].phases = keeper.take();
  const OverlapRow kept = computeOverlap(b.run, rule).at(0);
  EXPECT_EQ(kept.step_source, all.step_source);
  EXPECT_EQ(kept.step_count, all.step_count);
  for (size_t s = 0; s < all.steps.size() && s < kept.steps.size(); ++s) EXPECT_EQ(kept.steps[s].start_us, all.steps[s].start_us) << s;
  return all;
}

// The ranges held grow with the steps, not with the ranges inside them; those the rule
// names, and profiler steps, are held at any depth.
TEST(Overlap, OnlyTheRangesThatCanBeStepsAreHeld) {
  NamePool names;
  PhaseKeeper keeper(false, [](std::string_view n) { return n == "optimizer"; });
  uint64_t t = 0;
  for (int step = 0; step < 100; ++step) {
    keeper.add({names.intern("step"), t, t + 1000, 0}, "step " + std::to_string(step), "");
    for (int layer = 0; layer < 48; ++layer) keeper.add({names.intern("layer"), t + 10 + layer, t + 11 + layer, 1}, "layer " + std::to_string(layer), "");
    keeper.add({names.intern("optimizer"), t + 900, t + 950, 1}, "optimizer", "");
    keeper.add({names.intern("ProfilerStep#1"), t + 1, t + 990, 2}, "ProfilerStep#" + std::to_string(step), "");
    t += 1000;
  }
  const std::vector<PhaseSpan> kept = keeper.take();
  EXPECT_EQ(kept.size(), 300u);  // the steps, the optimizer ranges, the profiler steps
  EXPECT_TRUE(std::is_sorted(kept.begin(), kept.end(), [](const PhaseSpan& a, const PhaseSpan& b) { return a.cpu_start_ns < b.cpu_start_ns; }));
  EXPECT_EQ(std::count_if(kept.begin(), kept.end(), [](const PhaseSpan& p) { return p.depth == 0; }), 100);
  PhaseKeeper all(true, nullptr);
  all.add({names.intern("layer"), 0, 1, 1}, "layer 0", "");
  all.add({names.intern("layer"), 1, 2, 1}, "layer 1", "");
  EXPECT_EQ(all.take().size(), 2u);
}

// NCCL's NVTX ranges (one per API call, in its own domain, as deep as the program's steps
// since each domain nests on its own) are never the steps, however often they repeat.
TEST(Overlap, NcclsOwnRangesAreNeverTheSteps) {
  NamePool names;
  PhaseKeeper keeper(false, nullptr);
  for (uint64_t step = 0, t = 0; step < 5; ++step, t += 1000) {
    keeper.add({names.intern("train_step " + std::to_string(step)), t, t + 990, 0}, "train_step " + std::to_string(step), "");
    for (uint64_t k = 0; k < 3; ++k) keeper.add({names.intern("ncclAllReduce"), t + 100 * k, t + 100 * k + 50, 0}, "ncclAllReduce", "NCCL");
  }
  const std::vector<PhaseSpan> steps = stepRanges(keeper.take(), names, nullptr);
  ASSERT_EQ(steps.size(), 5u);
  for (const PhaseSpan& s : steps) EXPECT_TRUE(names[s.name].starts_with("train_step ")) << names[s.name];
}

std::vector<double> stepStarts(const OverlapRow& row) {
  std::vector<double> out;
  for (const StepOverlap& s : row.steps) out.push_back(std::round(s.start_us));
  return out;
}

TEST(Overlap, PyTorchProfilerStepsWinOverAMoreFrequentShallowerRange) {
  // torch.profiler's ProfilerStep#N inside the user's own repeating "train" and "log" ranges.
  std::vector<std::tuple<std::string, uint16_t, double, double>> ranges;
  for (int s = 0; s < 3; ++s) {
    ranges.emplace_back("train", 0, 100.0 * s, 100.0 * s + 95);
    ranges.emplace_back("log", 0, 100.0 * s + 95, 100.0 * s + 99);
    ranges.emplace_back("ProfilerStep#" + std::to_string(551 + s), 1, 100.0 * s + 2, 100.0 * s + 90);
  }
  const OverlapRow row = overlapWithRanges(ranges);
  EXPECT_EQ(row.step_source, "nvtx");
  EXPECT_EQ(stepStarts(row), (std::vector<double>{2, 102, 202}));
}

TEST(Overlap, TheStepRangeRuleNamesTheStepByNameOrExpression) {
  std::vector<std::tuple<std::string, uint16_t, double, double>> ranges;
  for (int s = 0; s < 3; ++s) {
    ranges.emplace_back("iteration " + std::to_string(s), 0, 100.0 * s, 100.0 * s + 95);
    ranges.emplace_back("optimizer", 1, 100.0 * s + 60, 100.0 * s + 70);
    ranges.emplace_back("ProfilerStep#" + std::to_string(s), 1, 100.0 * s + 2, 100.0 * s + 90);
  }
  EXPECT_EQ(stepStarts(overlapWithRanges(ranges, StepRule("optimizer"))), (std::vector<double>{60, 160, 260}));
  EXPECT_EQ(stepStarts(overlapWithRanges(ranges, StepRule("iteration [0-9]+"))), (std::vector<double>{0, 100, 200}));
  // A rule nothing matches leaves the op pattern.
  EXPECT_EQ(overlapWithRanges(ranges, StepRule("no such range")).step_source, "inferred");
  EXPECT_THROW(StepRule("iteration ["), std::regex_error);
}

TEST(Overlap, NvtxRangesWithoutClockSamplesFallBackToTheOpPattern) {
  const OverlapRow row = overlapWithNvtxSteps(false);
  EXPECT_EQ(row.step_source, "inferred");
  ASSERT_EQ(row.steps.size(), 3u);
  EXPECT_DOUBLE_EQ(row.steps[1].start_us, 100);
}

// Longer than the prefix the steps are inferred from, and read in a file order that is only
// roughly program order (ops of a step shuffled, as records come from several threads and
// as ops complete): the same figures as the ops in order, every step found to the end.
TEST(Overlap, ALongRunSweptInFileOrderGivesWhatProgramOrderGives) {
  constexpr int kSteps = 40'000;  // 80,000 ops
  static_assert(2 * kSteps > OverlapSweep::kPrefixOps);
  const RunModelBuilder b = steppedRank(kSteps, 7);
  const ProcessOpSource in_order = opsFromModel(b.run);
  const ProcessOpSource shuffled = [&](size_t p, const ProcessItems& each) {
    std::vector<RankOp> ops;
    in_order(p, {.op = [&](const RankOp& op) { ops.push_back(op); }, .kernel = each.kernel});
    std::mt19937 rng(5);
    for (size_t block = 0; block < ops.size(); block += 256)
      std::shuffle(ops.begin() + static_cast<std::ptrdiff_t>(block),
                   ops.begin() + static_cast<std::ptrdiff_t>(std::min(ops.size(), block + 256)), rng);
    for (const RankOp& op : ops) each.op(op);
  };
  const OverlapRow a = computeOverlap(b.run, {}, in_order).at(0);
  const OverlapRow c = computeOverlap(b.run, {}, shuffled).at(0);
  EXPECT_EQ(a.step_source, "inferred");
  EXPECT_EQ(a.step_count, kSteps);
  EXPECT_DOUBLE_EQ(a.mean_step_us, 100.0);
  EXPECT_NEAR(a.comm_us, 15.0 * kSteps, 1e-3);
  EXPECT_NEAR(a.overlapped_us, 2.0 * kSteps, 1e-3);
  EXPECT_EQ(a.out_of_order, 0u);
  EXPECT_EQ(c.out_of_order, 0u) << "shuffled within 256 ops: well inside the reorder window";
  EXPECT_EQ(c.step_count, a.step_count);
  EXPECT_DOUBLE_EQ(c.comm_us, a.comm_us);
  EXPECT_DOUBLE_EQ(c.overlapped_us, a.overlapped_us);
  EXPECT_DOUBLE_EQ(c.idle_us, a.idle_us);
  ASSERT_EQ(c.steps.size(), a.steps.size());
  for (size_t s = 0; s < a.steps.size(); ++s) {
    EXPECT_EQ(c.steps[s].last_step, a.steps[s].last_step) << s;
    EXPECT_DOUBLE_EQ(c.steps[s].exposed_us, a.steps[s].exposed_us) << s;
  }
  // Each step idles 65 us before the next one's first op; the last ends with its last op.
  const StepOverlap& last = a.steps.back();
  EXPECT_EQ(last.last_step, kSteps - 1);
  EXPECT_NEAR(last.idle_us, 65.0 * (last.last_step - last.step), 1e-6);
}

// An op read far later than its place (more than the reorder window) is placed where it
// came and counted, so that the row says its figures are approximate.
TEST(Overlap, AnOpFarOutOfOrderIsCounted) {
  const RunModelBuilder b = steppedRank(40'000);  // 80,000 ops: past the prefix, which is sorted whole
  const ProcessOpSource in_order = opsFromModel(b.run);
  const ProcessOpSource one_late = [&](size_t p, const ProcessItems& each) {
    std::vector<RankOp> ops;
    in_order(p, {.op = [&](const RankOp& op) { ops.push_back(op); }, .kernel = each.kernel});
    std::rotate(ops.begin() + 100, ops.begin() + 101, ops.end());  // op 100 read last
    for (const RankOp& op : ops) each.op(op);
  };
  const OverlapRow row = computeOverlap(b.run, {}, one_late).at(0);
  EXPECT_GE(row.out_of_order, 1u);
  EXPECT_LE(row.out_of_order, 2u) << "the op, and its kernel";
  EXPECT_EQ(computeOverlap(b.run, {}, in_order).at(0).out_of_order, 0u);
}

// The swept whole-run figures against a direct computation: random kernels, some
// overlapping each other and the compute, read in an order up to 512 places off, more of
// them than the prefix and the reorder windows hold. The compute kernels come in the same
// stream, each `kernel_lag` items after its time (CUPTI hands its buffers over late), and
// shuffled within blocks too.
void expectSweptFiguresEqualADirectComputation(size_t kernel_lag) {
  std::mt19937_64 rng(3);
  RunModelBuilder b({"a"});
  b.run.timelines[0].has_kernel_records = true;
  std::vector<RankOp> ops;
  uint64_t t = kBase;
  for (uint64_t i = 0; i < 100'000; ++i) {
    t += rng() % 4'000;  // some start while the one before still runs
    const uint64_t length = 500 + rng() % 6'000;
    ops.push_back(RankOp{.issue_ns = t - 30'000, .gpu_start_ns = t, .gpu_end_ns = t + length, .op_index = i,
                         .key = static_cast<uint32_t>(rng() % 7), .side = 0});
    if (rng() % 3 == 0) b.run.timelines[0].compute.push_back({t + rng() % 3'000, t + 3'000 + rng() % 9'000});
  }
  struct Item {
    bool is_op;
    size_t index;
  };
  std::vector<Item> file_order;
  for (size_t i = 0, k = 0; i < ops.size() || k < b.run.timelines[0].compute.size();) {
    const auto& compute = b.run.timelines[0].compute;
    const bool kernel_due = k < compute.size() && (i >= ops.size() || (i >= kernel_lag && compute[k].start_ns <= ops[i - kernel_lag].gpu_start_ns));
    if (kernel_due) file_order.push_back({false, k++});
    else file_order.push_back({true, i++});
  }
  for (size_t block = 0; block < file_order.size(); block += 512)
    std::shuffle(file_order.begin() + static_cast<std::ptrdiff_t>(block),
                 file_order.begin() + static_cast<std::ptrdiff_t>(std::min(file_order.size(), block + 512)), rng);
  const OverlapRow row = computeOverlap(b.run, {}, [&](size_t, const ProcessItems& each) {
                           for (const Item& item : file_order) {
                             if (item.is_op) each.op(ops[item.index]);
                             else each.kernel(b.run.timelines[0].compute[item.index]);
                           }
                         }).at(0);

  // Directly: the unions, their lengths and their intersection, over the span of the ops.
  const auto unionOf = [](std::vector<std::pair<uint64_t, uint64_t>> v) {
    std::sort(v.begin(), v.end());
    std::vector<std::pair<uint64_t, uint64_t>> out;
    for (const auto& [s, e] : v) {
      if (!out.empty() && s <= out.back().second) out.back().second = std::max(out.back().second, e);
      else out.emplace_back(s, e);
    }
    return out;
  };
  std::vector<std::pair<uint64_t, uint64_t>> comm_raw, compute_raw;
  for (const RankOp& op : ops) comm_raw.emplace_back(op.gpu_start_ns, op.gpu_end_ns);
  for (const GpuInterval& k : b.run.timelines[0].compute) compute_raw.emplace_back(k.start_ns, k.end_ns);
  const auto comm = unionOf(comm_raw), compute = unionOf(compute_raw);
  const uint64_t span_start = comm.front().first, span_end = comm.back().second;
  uint64_t comm_ns = 0, compute_ns = 0, both_ns = 0;
  for (const auto& [s, e] : comm) comm_ns += e - s;
  for (const auto& [s, e] : compute) {
    const uint64_t lo = std::max(s, span_start), hi = std::min(e, span_end);
    if (hi > lo) compute_ns += hi - lo;
  }
  for (size_t i = 0, j = 0; i < comm.size() && j < compute.size();) {
    const uint64_t lo = std::max(comm[i].first, compute[j].first), hi = std::min(comm[i].second, compute[j].second);
    if (hi > lo) both_ns += hi - lo;
    if (comm[i].second < compute[j].second) ++i;
    else ++j;
  }
  EXPECT_EQ(row.out_of_order, 0u);
  EXPECT_DOUBLE_EQ(row.comm_us, static_cast<double>(comm_ns) / 1e3);
  EXPECT_DOUBLE_EQ(row.overlapped_us, static_cast<double>(both_ns) / 1e3);
  EXPECT_DOUBLE_EQ(row.compute_only_us, static_cast<double>(compute_ns - both_ns) / 1e3);
  EXPECT_DOUBLE_EQ(row.idle_us, static_cast<double>(span_end - span_start - (comm_ns + compute_ns - both_ns)) / 1e3);
}

TEST(Overlap, SweptFiguresEqualADirectComputationOnRandomKernels) { expectSweptFiguresEqualADirectComputation(0); }
TEST(Overlap, ComputeKernelsReadFarBehindTheOpsGiveTheSameFigures) { expectSweptFiguresEqualADirectComputation(20'000); }

TEST(Overlap, PointToPointKernelsCountOnBothSides) {
  RunModelBuilder b({"a", "b"});
  const uint32_t comm = b.comm({0, 1}, "pair");
  b.p2p(comm, "Send", 0, 1, kMiB, {at(0), at(4)}, {at(1), at(4)});
  b.p2p(comm, "Send", 1, 0, kMiB, {at(2), at(6)}, {at(3), at(6)});  // overlaps the first on rank 0: union [0, 6)
  const std::vector<OverlapRow> rows = computeOverlap(b.run);
  EXPECT_DOUBLE_EQ(rows.at(0).comm_us, 6);
  EXPECT_DOUBLE_EQ(rows.at(1).comm_us, 5);  // [1, 6)
}

}  // namespace
}  // namespace commtrace::report
