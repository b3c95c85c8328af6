// alignClocks on runs built in memory: every process's GPU clock has a known offset and
// drift from true time (and the 1024 ns globaltimer tick), all members of an instance stop
// at one true instant, and the fit must give back each clock against the reference.
#include "tools/report/load/clock_align.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "tools/report/load/op_stream.h"

using namespace commtrace::report;

namespace {

constexpr uint64_t kGpuBase = 1'790'000'000'000'000'000ull;

struct Clock {
  double offset_ns = 0;
  double drift_ppm = 0;
  // The globaltimer reading at true time t (ns since the job began).
  uint64_t at(double t) const {
    const auto raw = static_cast<int64_t>(t * (1 + drift_ppm * 1e-6) + offset_ns);
    return (kGpuBase + static_cast<uint64_t>(raw)) / 1024 * 1024;
  }
};

class RunBuilder {
 public:
  int addProcess(Clock clock, int rank, const std::string& host = "h", int local_rank = 0, uint32_t restart = 0) {
    ProcessInfo& p = run_.processes.emplace_back();
    p.rank = rank;
    p.host = host;
    p.local_rank = local_rank;
    p.restart_count = restart;
    clocks_.push_back(clock);
    return static_cast<int>(run_.processes.size() - 1);
  }
  uint32_t addComm(std::vector<int> processes) {
    Communicator& c = run_.comms.emplace_back();
    c.id = run_.comms.size();
    c.size = static_cast<int>(processes.size());
    c.processes = std::move(processes);
    return static_cast<uint32_t>(run_.comms.size() - 1);
  }
  // One instance stopping at true time t on every member; late: extra ns on one member.
  void addInstance(uint32_t comm, double t, const char* func = "AllReduce", int late_seat = -1, double late_ns = 0) {
    const Communicator& c = run_.comms[comm];
    CollInstance& inst = run_.collectives.emplace_back();
    inst.comm = comm;
    inst.func = run_.names.intern(func);
    inst.first_member = static_cast<uint32_t>(run_.members.size());
    inst.n_members = static_cast<uint32_t>(c.size);
    for (int seat = 0; seat < c.size; ++seat) {
      MemberView m;
      m.process = c.processes[static_cast<size_t>(seat)];
      m.comm_rank = seat;
      const Clock& clock = clocks_[static_cast<size_t>(m.process)];
      m.gpu_end_ns = clock.at(t + (seat == late_seat ? late_ns : 0));
      m.gpu_start_ns = clock.at(t - 20'000);
      run_.members.push_back(m);
      ProcessInfo& p = run_.processes[static_cast<size_t>(m.process)];
      if (p.first_gpu_ns == 0 || m.gpu_start_ns < p.first_gpu_ns) p.first_gpu_ns = m.gpu_start_ns;
      p.last_gpu_ns = std::max(p.last_gpu_ns, m.gpu_end_ns);
    }
  }
  // n instances on comm, one every `every_ns` from true time start_ns, with a little
  // per-instance irregularity so that no sampling lines up with the clock tick.
  void addSeries(uint32_t comm, int n, double start_ns, double every_ns, const char* func = "AllReduce") {
    for (int i = 0; i < n; ++i) addInstance(comm, start_ns + every_ns * i + 37.0 * (i * i % 101), func);
  }
  // This process's clock minus the reference's at the reference's first op.
  double trueOffsetUs(int p, int ref = 0) const {
    const Clock& r = clocks_[static_cast<size_t>(ref)];
    const double t0 = (static_cast<double>(run_.processes[static_cast<size_t>(ref)].first_gpu_ns - kGpuBase) - r.offset_ns) /
                      (1 + r.drift_ppm * 1e-6);
    const Clock& c = clocks_[static_cast<size_t>(p)];
    return (t0 * (c.drift_ppm - r.drift_ppm) * 1e-6 + c.offset_ns - r.offset_ns) / 1e3;
  }
  RunModel& run() { return run_; }
  const Clock& clock(int p) const { return clocks_[static_cast<size_t>(p)]; }

 private:
  RunModel run_;
  std::vector<Clock> clocks_;
};

TEST(ClockAlign, RecoversEachClocksOffsetAndDrift) {
  RunBuilder b;
  const Clock clocks[] = {{0, 0}, {3'217'411, 6.5}, {-1'500'000, -3}, {250, 0}};
  std::vector<int> all;
  for (int r = 0; r < 4; ++r) all.push_back(b.addProcess(clocks[r], r, "node" + std::to_string(r / 2), r % 2));
  b.addSeries(b.addComm(all), 2000, 1e6, 1e6);
  const ClockAlignment a = alignClocks(b.run());

  ASSERT_EQ(a.summary.fits.size(), 4u);
  EXPECT_TRUE(a.summary.fits[0].aligned);
  EXPECT_EQ(a.summary.fits[0].offset_us, 0);
  for (int p = 1; p < 4; ++p) {
    const ClockFit& f = a.summary.fits[static_cast<size_t>(p)];
    EXPECT_TRUE(f.aligned);
    EXPECT_EQ(f.rank, p);
    EXPECT_EQ(f.host, "node" + std::to_string(p / 2));
    EXPECT_NEAR(f.offset_us, b.trueOffsetUs(p), 0.5) << p;
    EXPECT_TRUE(f.drift_fitted);
    EXPECT_NEAR(f.drift_ppm, clocks[p].drift_ppm, 0.1) << p;
    EXPECT_GT(f.anchors, 1000u);
    EXPECT_GT(f.residual_us, 0.1) << "the 1024 ns tick leaves a residual";
    EXPECT_LT(f.residual_us, 1.0);
    // The map puts the process's readings on the reference's clock.
    const double t = 1.5e9;
    EXPECT_NEAR(a.ref_from_gpu[static_cast<size_t>(p)].apply(static_cast<double>(b.clock(p).at(t))) - static_cast<double>(kGpuBase),
                static_cast<double>(b.clock(0).at(t) - kGpuBase), 2048);
  }
  EXPECT_GT(a.summary.residual_us_p50, 0);
  EXPECT_LT(a.summary.residual_us_p50, 1.0);
  EXPECT_GE(a.summary.residual_us_max, a.summary.residual_us_p50);
  EXPECT_LT(a.summary.residual_us_max, 2.5);
  EXPECT_FALSE(a.summary.cpu_gpu_mapped);
}

TEST(ClockAlign, ReachesProcessesThroughChainsOfCommunicators) {
  RunBuilder b;
  const Clock clocks[] = {{0, 0}, {1e6, 2}, {-2e6, -1}, {5e6, 4}};
  for (int r = 0; r < 4; ++r) b.addProcess(clocks[r], r);
  for (int r = 0; r < 3; ++r) b.addSeries(b.addComm({r, r + 1}), 500, 1e6 + r * 1e5, 4e6);
  const ClockAlignment a = alignClocks(b.run());
  for (int p = 1; p < 4; ++p) {
    EXPECT_TRUE(a.summary.fits[static_cast<size_t>(p)].aligned) << p;
    EXPECT_NEAR(a.summary.fits[static_cast<size_t>(p)].offset_us, b.trueOffsetUs(p), 1.0) << p;
    EXPECT_NEAR(a.summary.fits[static_cast<size_t>(p)].drift_ppm, clocks[p].drift_ppm, 0.2) << p;
  }
}

TEST(ClockAlign, CompletionsFarOffTheFitAreLeftOut) {
  RunBuilder b;
  const std::vector<int> all{b.addProcess({0, 0}, 0), b.addProcess({4e6, 1}, 1)};
  const uint32_t comm = b.addComm(all);
  b.addSeries(comm, 300, 1e6, 1e6);
  for (int i = 0; i < 3; ++i) b.addInstance(comm, 4e8 + i * 1e6, "AllReduce", 1, 500'000);  // rank 1 stops late
  const ClockAlignment a = alignClocks(b.run());
  const ClockFit& f = a.summary.fits[1];
  EXPECT_EQ(f.outliers, 3u);
  EXPECT_EQ(f.anchors, 300u);
  EXPECT_NEAR(f.offset_us, b.trueOffsetUs(1), 0.5);
  EXPECT_LT(a.summary.residual_us_max, 2.0);
}

TEST(ClockAlign, OnlyCollectivesThatStopTogetherAreAnchors) {
  RunBuilder b;
  b.addProcess({0, 0}, 0, "node0");
  b.addProcess({1e6, 0}, 1, "node1");
  b.addSeries(b.addComm({0, 1}), 100, 1e6, 1e6, "Broadcast");  // the root may finish first
  const ClockAlignment a = alignClocks(b.run());
  EXPECT_TRUE(a.summary.fits[0].aligned);
  EXPECT_FALSE(a.summary.fits[1].aligned);
  EXPECT_FALSE(a.ref_from_gpu[1].valid);
  EXPECT_TRUE(a.ref_from_gpu[0].valid);
}

TEST(ClockAlign, DriftIsHeldAtZeroWhenTheSpanCannotShowIt) {
  RunBuilder b;
  b.addProcess({0, 0}, 0);
  b.addProcess({2e6, 5}, 1);
  b.addSeries(b.addComm({0, 1}), 20, 1e6, 50'000);  // 1 ms of anchors: 5 ppm is 5 ns
  const ClockAlignment a = alignClocks(b.run());
  const ClockFit& f = a.summary.fits[1];
  EXPECT_TRUE(f.aligned);
  EXPECT_FALSE(f.drift_fitted);
  EXPECT_EQ(f.drift_ppm, 0);
  EXPECT_NEAR(f.offset_us, b.trueOffsetUs(1), 1.0);
}

TEST(ClockAlign, ARestartOnTheSameGpuKeepsItsClock) {
  RunBuilder b;
  const Clock node0{0, 0}, node1{7e6, 3};
  const int gen0_rank0 = b.addProcess(node0, 0, "node0", 0, 0);
  const int gen0_rank1 = b.addProcess(node1, 1, "node1", 0, 0);
  const int gen1_rank0 = b.addProcess(node0, 0, "node0", 0, 1);
  const int gen1_rank1 = b.addProcess(node1, 1, "node1", 0, 1);
  b.addSeries(b.addComm({gen0_rank0, gen0_rank1}), 500, 1e6, 1e6);
  b.addSeries(b.addComm({gen1_rank0, gen1_rank1}), 500, 2e9, 1e6);  // after the restart
  const ClockAlignment a = alignClocks(b.run());
  for (int p : {gen1_rank0, gen1_rank1}) EXPECT_TRUE(a.summary.fits[static_cast<size_t>(p)].aligned) << p;
  EXPECT_EQ(a.summary.fits[static_cast<size_t>(gen1_rank0)].anchors, 0u) << "taken from its first generation";
  EXPECT_NEAR(a.summary.fits[static_cast<size_t>(gen1_rank1)].offset_us, b.trueOffsetUs(gen0_rank1), 1.0);
  const double t = 2.3e9;
  EXPECT_NEAR(a.ref_from_gpu[static_cast<size_t>(gen1_rank1)].apply(static_cast<double>(node1.at(t))) - static_cast<double>(kGpuBase),
              static_cast<double>(node0.at(t) - kGpuBase), 2048);
}

TEST(ClockAlign, CpuTimesAreMappedOnlyWhenEveryProcessHasClockSamples) {
  RunBuilder b;
  b.addProcess({0, 0}, 0);
  b.addProcess({1e6, 0}, 1);
  b.addSeries(b.addComm({0, 1}), 50, 1e6, 1e6);
  b.run().processes[0].gpu_from_cpu.valid = true;
  EXPECT_FALSE(alignClocks(b.run()).summary.cpu_gpu_mapped);
  b.run().processes[1].gpu_from_cpu.valid = true;
  EXPECT_TRUE(alignClocks(b.run()).summary.cpu_gpu_mapped);
}

// The anchor sample is bounded per communicator whatever the run's length, and is the same
// set whichever order the instances arrive in.
TEST(AnchorSample, KeepsABoundedSampleChosenByHashNotByArrival) {
  const NamePool names;
  const auto feed = [&](AnchorSample& sample, uint32_t comm, uint32_t members, uint64_t instances, bool reversed) {
    std::vector<MemberView> seats(members);
    for (uint32_t m = 0; m < members; ++m) seats[m] = MemberView{.process = static_cast<int32_t>(m), .gpu_end_ns = 1 + m};
    for (uint64_t i = 0; i < instances; ++i) {
      CollInstance c;
      c.comm = comm;
      c.func = names.find("AllReduce");
      c.seq = c.op_index = reversed ? instances - 1 - i : i;
      c.n_members = members;
      sample.collective(c, seats);
    }
  };
  AnchorSample forward, backward;
  feed(forward, 0, 4, 5000, false);
  feed(backward, 0, 4, 5000, true);
  feed(forward, 1, 1024, 1000, false);
  feed(backward, 1, 1024, 1000, true);
  const auto ops = [&](const AnchorSample& sample, uint32_t comm) {
    std::vector<uint64_t> out;
    for (const AnchorSample::Instance* i : sample.instances(names))
      if (i->comm == comm) out.push_back(i->op_index);
    return out;
  };
  EXPECT_EQ(ops(forward, 0).size(), 1024u) << "at most 1,024 instances of a narrow communicator";
  EXPECT_EQ(ops(forward, 1).size(), 256u) << "a 1,024-rank one keeps about 262,000 member ends";
  EXPECT_EQ(ops(forward, 0), ops(backward, 0));
  EXPECT_EQ(ops(forward, 1), ops(backward, 1));
  const std::vector<uint64_t> kept = ops(forward, 0);
  EXPECT_GT(kept.back() - kept.front(), 4500u) << "spread over the run, not its first instances";

  // In a run of 4,096 processes, a quarter (width_budget.h), never under 64 instances: told
  // first, or after the instances (a followed run's files), or merged, the same sample.
  AnchorSample wide, told_later, merged;
  wide.runWidth(4096);
  feed(wide, 0, 4, 5000, false);
  feed(wide, 1, 1024, 1000, false);
  feed(told_later, 0, 4, 5000, true);
  told_later.runWidth(4096);
  merged.merge(wide);
  EXPECT_EQ(ops(wide, 0).size(), 256u);
  EXPECT_EQ(ops(wide, 1).size(), 64u) << "the floor";
  std::vector<uint64_t> smallest = ops(forward, 0);
  const auto hash_order = [&](uint64_t a, uint64_t b) {
    const NameId f = names.find("AllReduce");
    return instanceHash(f, a, a) < instanceHash(f, b, b);
  };
  std::sort(smallest.begin(), smallest.end(), hash_order);
  smallest.resize(256);
  std::sort(smallest.begin(), smallest.end());
  EXPECT_EQ(ops(wide, 0), smallest) << "the smallest hashes of the full sample";
  EXPECT_EQ(ops(told_later, 0), smallest);
  EXPECT_EQ(ops(merged, 0), smallest);
  EXPECT_EQ(ops(merged, 1), ops(wide, 1));
}

}  // namespace
