// Live straggler alerts on a DDP-like stream of AllReduce (8 ranks, one every 50 ms, each
// rank's arrival jittered): nothing over ten healthy minutes; a rank 5 % slower per step from
// minute 5 is named within 5 s of it, and its recovery within 5 s of that.
#include "tools/report/analyses/live_stragglers.h"

#include <gtest/gtest.h>

#include <random>

#include "tests/support/live_pair.h"
#include "tests/support/run_model_builder.h"
#include "tools/report/evidence_words.h"

namespace commtrace::report {
namespace {

constexpr uint64_t kSecond = 1'000'000'000, kStepNs = 50'000'000;
constexpr uint64_t kT0 = 1'790'000'000 * kSecond;  // some UTC time

struct Fired {
  LiveAlert alert;
  uint64_t watermark_utc_ns;
};

// The GPU gap as the loader measures it: from the rank's previous op's end (its first op has none).
const auto kMeasured = [](uint64_t, int, uint64_t) { return uint64_t{0}; };

// Feeds `seconds` of steps; `late_ns(step, rank)` delays a rank's arrival; `gap_ns(step, rank,
// late)` is the GPU gap its op is read with, 0 for the one measured from its previous op.
template <class Late, class Gap = decltype(kMeasured)>
std::vector<Fired> play(testutil::RunModelBuilder& b, uint32_t comm, uint64_t seconds, uint64_t seed, Late late_ns, Gap gap_ns = kMeasured) {
  std::vector<Fired> fired;
  uint64_t watermark = 0;
  LiveStragglers live(b.run, {}, [&](const LiveAlert& a) { fired.push_back({a, watermark}); });
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<uint64_t> jitter(0, 400'000);  // 0.4 ms: 0.8 % of the step
  const int n = b.run.comms[comm].size;
  CollInstance c;
  c.comm = comm;
  c.func = b.run.names.intern("AllReduce");
  c.n_members = static_cast<uint32_t>(n);
  std::vector<MemberView> members(static_cast<size_t>(n));
  std::vector<uint64_t> previous_end(static_cast<size_t>(n), 0);
  for (uint64_t step = 0; step < seconds * kSecond / kStepNs; ++step) {
    const uint64_t t = kT0 + step * kStepNs;
    uint64_t last = 0;
    for (int r = 0; r < n; ++r) {
      MemberView& m = members[static_cast<size_t>(r)];
      m.process = r;
      m.comm_rank = r;
      const uint64_t late = late_ns(step, r);
      m.gpu_start_ns = t + jitter(rng) + late;
      const uint64_t given = gap_ns(step, r, late);
      m.gpu_gap_ns = given != 0 ? given : step == 0 ? MemberView::kNoGap : m.gpu_start_ns - previous_end[static_cast<size_t>(r)];
      m.cpu_start_ns = m.gpu_start_ns - 20'000;
      m.cpu_end_ns = m.cpu_start_ns + 5'000;
      last = std::max(last, m.gpu_start_ns);
    }
    for (MemberView& m : members) m.gpu_end_ns = previous_end[static_cast<size_t>(m.process)] = last + 300'000;
    c.seq = c.op_index = step;
    live.collective(c, members);
    watermark = t;  // every file has reached this step
    live.advance(watermark);
  }
  return fired;
}

TEST(LiveStragglers, TenHealthyMinutesRaiseNothing) {
  for (uint64_t seed : {1, 2, 3}) {
    testutil::RunModelBuilder b(std::vector<std::string>(8, "h"));
    const uint32_t world = b.comm({0, 1, 2, 3, 4, 5, 6, 7}, "world");
    // Besides the jitter, now and then one rank is held up 10 ms (a page fault, a GC pause).
    std::mt19937_64 hiccups(seed + 100);
    const std::vector<Fired> fired = play(b, world, 600, seed, [&](uint64_t, int) { return hiccups() % 400 == 0 ? uint64_t{10'000'000} : uint64_t{0}; });
    EXPECT_TRUE(fired.empty()) << "seed " << seed << ": " << (fired.empty() ? "" : alertLine(b.run, fired.front().alert));
  }
}

TEST(LiveStragglers, ARankFivePercentSlowerIsNamedWithinFiveSecondsAndItsRecoveryToo) {
  testutil::RunModelBuilder b({"h0", "h0", "h0", "h0", "h1", "h1", "h1", "h1"});
  b.run.processes[5].local_rank = 1;
  const uint32_t world = b.comm({0, 1, 2, 3, 4, 5, 6, 7}, "world");
  constexpr uint64_t kSlowFrom = 300 * kSecond / kStepNs, kSlowTo = 400 * kSecond / kStepNs;
  const std::vector<Fired> fired = play(b, world, 500, 4, [&](uint64_t step, int r) {
    return r == 5 && step >= kSlowFrom && step < kSlowTo ? kStepNs / 20 : uint64_t{0};  // 5 % of the step
  });
  ASSERT_EQ(fired.size(), 2u);
  const LiveAlert& straggler = fired[0].alert;
  EXPECT_EQ(straggler.kind, LiveAlert::Kind::kStraggler);
  EXPECT_EQ(straggler.process, 5);
  EXPECT_EQ(straggler.since_utc_ns, kT0 + 300 * kSecond) << "the first window of the slowdown";
  EXPECT_LE(fired[0].watermark_utc_ns, kT0 + 305 * kSecond) << "named within 5 s of the onset";
  EXPECT_GT(straggler.late_share, 0.9);
  EXPECT_NEAR(straggler.lateness_us, 2500 + 200, 300) << "its delay plus the others' mean jitter";
  const std::string line = alertLine(b.run, straggler);
  EXPECT_EQ(line.rfind("commtrace: STRAGGLER rank 5 (host h1, GPU 1) +", 0), 0u) << line;
  EXPECT_NE(line.find(" per step late at "), std::string::npos) << line;
  EXPECT_NE(line.find(" of AllReduce on world since "), std::string::npos) << line;
  EXPECT_EQ(straggler.basis, StragglerBasis::kInferred) << "its own gap was the longer";
  EXPECT_NE(line.find("[compute: its GPU's gap before them +"), std::string::npos) << line;

  const LiveAlert& recovered = fired[1].alert;
  EXPECT_EQ(recovered.kind, LiveAlert::Kind::kRecovered);
  EXPECT_EQ(recovered.process, 5);
  EXPECT_EQ(recovered.since_utc_ns, kT0 + 400 * kSecond);
  EXPECT_LE(fired[1].watermark_utc_ns, kT0 + 405 * kSecond);
  EXPECT_EQ(alertLine(b.run, recovered).rfind("commtrace: RECOVERED rank 5 (host h1, GPU 1) no longer late at AllReduce on world since ", 0), 0u)
      << alertLine(b.run, recovered);
}

// The class in the alert: a delay that lengthened the rank's GPU gap before the op (its own
// work ran longer) reads "compute", with the gap's excess. A lateness its gap does not show,
// where every member left the op before together (no wait it inherited either), is no one's
// delay: the root-cause engine names nobody for it.
TEST(LiveStragglers, TheAlertSaysWhetherTheRanksOwnGapExplainsItsLateness) {
  for (const bool in_gap : {true, false}) {
    testutil::RunModelBuilder b(std::vector<std::string>(8, "h"));
    const uint32_t world = b.comm({0, 1, 2, 3, 4, 5, 6, 7}, "world");
    const std::vector<Fired> fired = play(
        b, world, 30, 6, [](uint64_t step, int r) { return r == 3 && step >= 100 ? kStepNs / 20 : uint64_t{0}; },
        [&](uint64_t, int, uint64_t late) { return 40'000'000 + (in_gap ? late : 0); });
    if (!in_gap) {
      EXPECT_TRUE(fired.empty()) << alertLine(b.run, fired.front().alert);
      continue;
    }
    ASSERT_EQ(fired.size(), 1u);
    const LiveAlert& a = fired[0].alert;
    const std::string line = alertLine(b.run, a);
    EXPECT_EQ(a.cls, "compute") << line;
    EXPECT_EQ(a.basis, StragglerBasis::kInferred);
    EXPECT_NEAR(a.gap_excess_us, 2500, 1) << "its gap over its peers' median, all 40 ms but its own";
    EXPECT_NE(line.find("[compute: its GPU's gap before them +2.5 ms over its peers', host delay not ruled out; "), std::string::npos)
        << line;
  }
}

// A lateness its gap explains only in part (the rest the job's shape: every member left the
// op before together) is still the rank's own: the class reads the gap excess at the ops
// where it created the delay, as the report's does, not against the whole lateness ("an
// earlier op held it up" would send the user looking at an op that held nobody).
TEST(LiveStragglers, ADelayItsGapExplainsInPartIsStillCompute) {
  testutil::RunModelBuilder b(std::vector<std::string>(8, "h"));
  const uint32_t world = b.comm({0, 1, 2, 3, 4, 5, 6, 7}, "world");
  const std::vector<Fired> fired = play(
      b, world, 30, 7, [](uint64_t step, int r) { return r == 3 && step >= 100 ? kStepNs / 5 : uint64_t{0}; },
      [&](uint64_t, int, uint64_t late) { return 40'000'000 + late * 2 / 5; });
  ASSERT_FALSE(fired.empty());
  const LiveAlert& a = fired[0].alert;
  EXPECT_EQ(a.process, 3);
  EXPECT_GT(a.lateness_us, 2 * a.gap_excess_us) << "the gap explains under half of the lateness";
  EXPECT_EQ(a.cls, "compute") << alertLine(b.run, a);
  EXPECT_NEAR(a.gap_excess_us, 4000, 1) << "two fifths of its 10 ms: 8 % of the step, over the 5 % worth an alert";
}

// A rank last more often than chance but costing the others little (1 % of their time) is
// not worth an alert: the effect size, not significance alone, decides.
TEST(LiveStragglers, ASignificantButSmallDelayIsNotAStraggler) {
  testutil::RunModelBuilder b(std::vector<std::string>(8, "h"));
  const uint32_t world = b.comm({0, 1, 2, 3, 4, 5, 6, 7}, "world");
  const std::vector<Fired> fired = play(b, world, 120, 5, [](uint64_t, int r) { return r == 2 ? kStepNs / 100 : uint64_t{0}; });
  EXPECT_TRUE(fired.empty()) << (fired.empty() ? "" : alertLine(b.run, fired.front().alert));
}

}  // namespace
}  // namespace commtrace::report
