// Stragglers on simulated runs: ranks compute, then meet in synchronizing collectives that
// stop together on every member; each rank's GPU clock has its own offset. Lateness comes
// from durations alone; the verdict must flag a rank that is last far more often than
// chance, and nobody in a run with jitter only.
#include "tools/report/analyses/stragglers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "tests/support/run_model_builder.h"
#include "tools/report/analyses/lateness.h"
#include "tools/report/analyses/lateness_heatmap.h"
#include "tools/report/analyses/slow_links.h"
#include "tools/report/evidence_words.h"

using namespace commtrace::report;
using commtrace::testutil::RunModelBuilder;
using commtrace::testutil::Span;

namespace {

constexpr uint64_t kUs = 1000;

// Plays "compute, then a collective over each group" steps on a simulated timeline.
class Simulation {
 public:
  Simulation(int ranks, int ranks_per_host, int64_t clock_offset_per_host_ns)
      : builder_(hostNames(ranks, ranks_per_host)), now_(ranks, 0), offset_(ranks), rng_(12345) {
    for (int r = 0; r < ranks; ++r) offset_[r] = 1'000'000'000 + (r / ranks_per_host) * clock_offset_per_host_ns;
  }

  uint32_t comm(const std::vector<int>& ranks, const std::string& name) { return builder_.comm(ranks, name); }

  // Every rank computes base + uniform jitter (+ extra for the slow ones, optionally as
  // recorded kernels), then each comm runs one AllReduce that stops transfer after its last arrival.
  void step(const std::vector<uint32_t>& comms, uint64_t compute_ns, uint64_t jitter_ns, const std::map<int, uint64_t>& extra,
            uint64_t transfer_ns, bool record_kernels = false) {
    std::uniform_int_distribution<int64_t> jitter(-static_cast<int64_t>(jitter_ns), static_cast<int64_t>(jitter_ns));
    for (size_t r = 0; r < now_.size(); ++r) {
      const auto it = extra.find(static_cast<int>(r));
      const uint64_t busy = compute_ns + jitter(rng_) + (it == extra.end() ? 0 : it->second);
      if (record_kernels) run().timelines[r].compute.push_back({gpu(r, now_[r]), gpu(r, now_[r] + busy)});
      now_[r] += busy;
    }
    for (uint32_t c : comms) {
      const std::vector<int> members = run().comms[c].global_ranks;
      uint64_t last = 0;
      for (int r : members) last = std::max(last, now_[r]);
      std::vector<Span> spans;
      for (int r : members) spans.push_back({gpu(r, now_[r]), gpu(r, last + transfer_ns)});
      builder_.coll(c, "AllReduce", 1 << 20, spans);
      for (int r : members) now_[r] = last + transfer_ns;
    }
  }

  uint64_t gpu(size_t rank, uint64_t t) const { return static_cast<uint64_t>(offset_[rank] + static_cast<int64_t>(t)); }
  RunModel& run() { return builder_.run; }
  RunModelBuilder& builder() { return builder_; }

 private:
  static std::vector<std::string> hostNames(int ranks, int per_host) {
    std::vector<std::string> hosts;
    for (int r = 0; r < ranks; ++r) hosts.push_back("node" + std::to_string(r / per_host));
    return hosts;
  }
  RunModelBuilder builder_;
  std::vector<uint64_t> now_;  // simulated time per rank
  std::vector<int64_t> offset_;
  std::mt19937_64 rng_;
};

// 8 ranks on 2 hosts: tensor-parallel groups of 4 and a world communicator.
struct TwoNodeJob {
  Simulation sim{8, 4, 40'000'000};
  uint32_t tp0 = sim.comm({0, 1, 2, 3}, "tp.0");
  uint32_t tp1 = sim.comm({4, 5, 6, 7}, "tp.1");
  uint32_t world = sim.comm({0, 1, 2, 3, 4, 5, 6, 7}, "world");
  void play(int steps, const std::map<int, uint64_t>& extra, bool record_kernels = false) {
    for (int s = 0; s < steps; ++s) {
      sim.step({tp0, tp1}, 2000 * kUs, 100 * kUs, extra, 100 * kUs, record_kernels);
      sim.step({world}, 1000 * kUs, 100 * kUs, extra, 50 * kUs, record_kernels);
    }
  }
};

ClockAlignment unaligned(const RunModel& run) {
  ClockAlignment a;
  a.ref_from_gpu.resize(run.processes.size());
  return a;
}

const StragglerRow& rowOf(const StragglerReport& r, int rank) {
  const auto it = std::find_if(r.ranks.begin(), r.ranks.end(), [&](const StragglerRow& row) { return row.rank == rank; });
  EXPECT_NE(it, r.ranks.end()) << "rank " << rank;
  return *it;
}

TEST(Lateness, DurationsGiveWaitLatenessAndTheLastArriver) {
  RunModelBuilder b({"h", "h", "h", "h"});
  const uint32_t comm = b.comm({0, 1, 2, 3}, "w");
  b.coll(comm, "AllReduce", 8, {{100'000, 500'000}, {400'000, 500'000}, {300'000, 500'000}, {0, 0}});
  InstanceArrivals a;
  ASSERT_TRUE(arrivalsOf(b.run, b.run.collectives[0], a));
  ASSERT_EQ(a.members.size(), 3u);
  EXPECT_EQ(a.members[0].wait_ns, 300'000u);
  EXPECT_EQ(a.members[1].wait_ns, 0u);
  EXPECT_EQ(a.members[2].lateness_ns, 200'000u);
  EXPECT_EQ(a.members[1].lateness_ns, 300'000u);
  EXPECT_DOUBLE_EQ(a.members[1].last_share, 1.0);
  EXPECT_DOUBLE_EQ(a.members[0].last_share, 0.0);
  EXPECT_EQ(a.total_wait_ns, 400'000u);
  EXPECT_EQ(a.first_lateness_ns, 300'000u);
}

TEST(Lateness, TiesShareTheBlameAndRootedOpsAreNotCompared) {
  RunModelBuilder b({"h", "h", "h"});
  const uint32_t comm = b.comm({0, 1, 2}, "w");
  b.coll(comm, "AllGather", 8, {{1000, 900'000}, {400'000, 900'000}, {401'000, 900'000}});
  b.coll(comm, "Broadcast", 8, {{1000, 900'000}, {400'000, 900'000}, {401'000, 900'000}});
  InstanceArrivals a;
  ASSERT_TRUE(arrivalsOf(b.run, b.run.collectives[0], a));
  EXPECT_DOUBLE_EQ(a.members[1].last_share, 0.5) << "1 us apart: within the 2-tick tie";
  EXPECT_DOUBLE_EQ(a.members[2].last_share, 0.5);
  EXPECT_FALSE(arrivalsOf(b.run, b.run.collectives[1], a)) << "members of a Broadcast need not stop together";
}

TEST(Stragglers, JitterAloneFlagsNobody) {
  for (int seed_steps : {50, 200}) {
    TwoNodeJob job;
    job.play(seed_steps, {});
    const StragglerReport r = rankStragglers(job.sim.run(), unaligned(job.sim.run()));
    ASSERT_EQ(r.ranks.size(), 8u);
    for (const StragglerRow& row : r.ranks) {
      EXPECT_FALSE(row.flagged) << "rank " << row.rank << ": " << evidenceWords(row);
      EXPECT_EQ(row.cls, "none");
      EXPECT_LT(row.confidence, 0.5);
    }
  }
}

TEST(Stragglers, ASlowComputeRankIsFlaggedFirstWithItsNumbers) {
  TwoNodeJob job;
  job.play(40, {{6, 1200 * kUs}});
  const StragglerReport r = rankStragglers(job.sim.run(), unaligned(job.sim.run()));
  const StragglerRow& top = r.ranks.front();
  EXPECT_EQ(top.rank, 6);
  EXPECT_TRUE(top.flagged) << evidenceWords(top);
  EXPECT_EQ(top.host, "node1");
  EXPECT_EQ(top.instances, 80u);
  // Last at every instance; at world part of its lateness is its tp.1 lateness passed on
  // (its gap there explains 1.2 of the others' mean 1.9 ms wait), created by itself as well.
  EXPECT_GT(top.late_fraction, 0.8);
  // Per step: at tp.1 three others wait ~1.2 ms; at world its three tp.1 peers wait ~1.2 ms
  // and tp.0, which did not wait for it before, ~2.4 ms. Jitter: within 0.2 ms a wait.
  EXPECT_NEAR(top.wait_caused_us, 40 * (3 * 1200.0 + 3 * 1200.0 + 4 * 2400.0), 40 * 10 * 200.0);
  EXPECT_EQ(top.cls, "compute");
  // Shares of last place as a percentage (ties split one instance), durations as the tables spell them.
  EXPECT_EQ(evidenceWords(top).rfind("created the delay in 80.9% of 80 synchronizations (a tie for last shared) where chance gives 18.8%; its GPU gaps before its ops exceed its peers' by z = ", 0), 0u)
      << evidenceWords(top);
  EXPECT_EQ(evidenceWords(top).find(".00 ms"), std::string::npos) << evidenceWords(top);
  EXPECT_NE(evidenceWords(top).find("host-side delay not ruled out"), std::string::npos) << evidenceWords(top);
  EXPECT_GT(top.confidence, 0.2);
  EXPECT_LT(top.confidence, 0.9) << "no kernel records: less sure";
  for (size_t i = 1; i < r.ranks.size(); ++i) EXPECT_FALSE(r.ranks[i].flagged) << evidenceWords(r.ranks[i]);
  // The rows come in the order every format prints them: by wait caused, most first.
  for (size_t i = 1; i < r.ranks.size(); ++i) EXPECT_GE(r.ranks[i - 1].wait_caused_us, r.ranks[i].wait_caused_us) << i;

  ASSERT_FALSE(r.hosts.empty());
  EXPECT_EQ(r.hosts.front().host, "node1");
  EXPECT_EQ(r.hosts.front().ranks, (std::vector<int>{4, 5, 6, 7}));
  EXPECT_FALSE(r.hosts.front().flagged) << "one slow rank is not a slow host";
  EXPECT_LT(r.hosts.front().confidence, 0.5) << "unflagged, so not sure of it";
  const auto tp1 = std::find_if(r.comms.begin(), r.comms.end(), [](const CommStragglerRow& c) { return c.comm_name == "tp.1"; });
  ASSERT_NE(tp1, r.comms.end());
  EXPECT_EQ(tp1->worst_rank, 6);
  EXPECT_EQ(tp1->instances, 40u);
  // Its worst seat's waiting caused counts what its delays made others wait at world too.
  EXPECT_LT(tp1->total_wait_us, tp1->wait_caused_us);
}

// A host of one rank is never the culprit, its rank is: the host row was shown at confidence
// 1.00 and unflagged beside its flagged rank.
TEST(Stragglers, AHostOfOneRankHasNoConfidenceOfItsOwn) {
  Simulation sim{4, 1, 40'000'000};
  const uint32_t world = sim.comm({0, 1, 2, 3}, "world");
  for (int s = 0; s < 40; ++s) sim.step({world}, 2000 * kUs, 100 * kUs, {{2, 1200 * kUs}}, 100 * kUs, false);
  const StragglerReport r = rankStragglers(sim.run(), unaligned(sim.run()));
  EXPECT_TRUE(rowOf(r, 2).flagged);
  const auto host = std::find_if(r.hosts.begin(), r.hosts.end(), [](const HostStragglerRow& h) { return h.host == "node2"; });
  ASSERT_NE(host, r.hosts.end());
  EXPECT_FALSE(host->flagged);
  EXPECT_EQ(host->confidence, 0.0);
}

TEST(Stragglers, KernelRecordsTellComputeFromHost) {
  for (const bool busy : {true, false}) {
    TwoNodeJob job;
    job.play(30, {{2, 1000 * kUs}}, /*record_kernels=*/true);
    RunModel& run = job.sim.run();
    for (ProcessTimeline& t : run.timelines) t.has_kernel_records = true;
    if (!busy) run.timelines[2].compute.clear();  // rank 2's GPU sat idle before its ops
    const StragglerReport r = rankStragglers(run, unaligned(run));
    const StragglerRow& row = rowOf(r, 2);
    ASSERT_TRUE(row.flagged) << evidenceWords(row);
    EXPECT_EQ(row.cls, busy ? "compute" : "host") << evidenceWords(row);
    EXPECT_GT(row.confidence, 0.4) << evidenceWords(row);
  }
}

TEST(Stragglers, ALateEnqueueMeansHost) {
  TwoNodeJob job;
  job.play(30, {{5, 1000 * kUs}});
  RunModel& run = job.sim.run();
  for (ProcessInfo& p : run.processes) p.gpu_from_cpu = {1.0, 0.0, true};
  // The CPU handed rank 5's ops over just before they started; the others enqueued early.
  for (const CollInstance& c : run.collectives)
    for (uint32_t i = 0; i < c.n_members; ++i) {
      MemberView& m = run.members[c.first_member + i];
      m.cpu_start_ns = m.process == 5 ? m.gpu_start_ns - 5 * kUs : m.gpu_start_ns - 1500 * kUs;
    }
  const StragglerReport report = rankStragglers(run, unaligned(run));
  const StragglerRow& row = rowOf(report, 5);
  ASSERT_TRUE(row.flagged);
  EXPECT_EQ(row.cls, "host") << evidenceWords(row);
}

TEST(Stragglers, HeatmapBinsLatenessOnTheAlignedTimelineOrOpOrder) {
  TwoNodeJob job;
  job.play(20, {{6, 1200 * kUs}});
  const RunModel& run = job.sim.run();
  const StragglerReport plain = rankStragglers(run, unaligned(run));
  EXPECT_EQ(plain.heatmap.axis, "op order");
  EXPECT_GT(plain.heatmap.bin_ops, 0);

  ClockAlignment aligned = unaligned(run);
  for (size_t p = 0; p < run.processes.size(); ++p)  // undo each host's offset
    aligned.ref_from_gpu[p] = {1.0, -(1e9 + (p / 4) * 40e6), true};
  const LatenessHeatmap h = rankStragglers(run, aligned).heatmap;
  EXPECT_EQ(h.axis, "aligned time");
  ASSERT_EQ(h.ranks, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(h.mean_lateness_us.size(), 8u);
  EXPECT_EQ(h.mean_lateness_us[6].size(), static_cast<size_t>(kHeatmapBins));
  EXPECT_GT(h.bin_us, 0);
  // Rank 6 arrives 1.2 ms after the first of its tp.1 peers and 2.4 ms after tp.0 at world;
  // its tp.1 peers, 1.2 ms late at world only, come next; tp.0's rank 0 only jitters.
  int bins = 0;
  for (int b = 0; b < kHeatmapBins; ++b) {
    if (h.mean_lateness_us[6][b] < 0) continue;
    ++bins;
    EXPECT_GT(h.mean_lateness_us[6][b], h.mean_lateness_us[4][b] + 1000.0);
    if (h.mean_lateness_us[0][b] >= 0) {
      EXPECT_LT(h.mean_lateness_us[0][b], 400.0);
    }
  }
  EXPECT_GT(bins, 10);
  const int empty = static_cast<int>(std::count(h.mean_lateness_us[0].begin(), h.mean_lateness_us[0].end(), -1.0));
  EXPECT_GT(empty, 0) << "bins without an instance say so (-1), not 0";
}

// Links: transfers of 4 MiB between pairs; bandwidth by pair.
TEST(SlowLinks, TheSlowPairIsFlaggedAgainstItsKind) {
  RunModelBuilder b({"n0", "n0", "n0", "n0", "n1", "n1", "n1", "n1"});
  const uint32_t world = b.comm({0, 1, 2, 3, 4, 5, 6, 7}, "world");
  const uint64_t bytes = 4 << 20;
  auto send = [&](int src, int dst, double gbs) {
    const auto ns = static_cast<uint64_t>(bytes / gbs);
    b.p2p(world, "Send", src, dst, bytes, {1000, 1000 + ns}, {1000, 1000 + ns});
  };
  for (int r = 0; r < 4; ++r) send(r, r + 4, r == 3 ? 3.0 : 24.0);      // inter-host pairs; 3 <-> 7 slow
  for (int r = 0; r < 8; ++r) send(r, r % 4 == 3 ? r - 3 : r + 1, 150.0);  // intra-host rings
  b.p2p(world, "Send", 1, 5, 4096, {1000, 101'000}, {1000, 101'000});   // latency-bound: ignored
  const std::vector<SlowLinkRow> links = slowLinks(b.run);
  ASSERT_FALSE(links.empty());
  EXPECT_EQ(links.front().a, 3);
  EXPECT_EQ(links.front().b, 7);
  EXPECT_TRUE(links.front().flagged) << evidenceWords(links.front());
  EXPECT_TRUE(links.front().inter_host);
  EXPECT_EQ(links.front().hosts, "n0 <-> n1");
  EXPECT_NEAR(links.front().achieved_gbs, 3.0, 0.01);
  EXPECT_NEAR(links.front().peer_median_gbs, 24.0, 0.01);
  EXPECT_GT(links.front().confidence, 0.0);
  EXPECT_EQ(std::count_if(links.begin(), links.end(), [](const SlowLinkRow& l) { return l.flagged; }), 1);
  const auto intra = std::find_if(links.begin(), links.end(), [](const SlowLinkRow& l) { return !l.inter_host; });
  ASSERT_NE(intra, links.end());
  EXPECT_NEAR(intra->peer_median_gbs, 150.0, 0.01) << "intra-host links compare among themselves";
  const auto pair15 = std::find_if(links.begin(), links.end(), [](const SlowLinkRow& l) { return l.a == 1 && l.b == 5; });
  ASSERT_NE(pair15, links.end());
  EXPECT_EQ(pair15->ops, 1u) << "the 4 KiB send says nothing about bandwidth";
}

TEST(SlowLinks, CollectivesLendTheirBusBwToTheirEdgesAndTheBestOpWins) {
  RunModelBuilder b({"n0", "n1", "n2", "n3"});
  const uint32_t ring = b.comm({0, 1, 2, 3}, "ring");
  const uint32_t pair = b.comm({0, 1}, "pair");
  // A 4-rank ring whose busBw is 10 GB/s (edge 0-1 too), and a fast op on 0-1 alone.
  const uint64_t bytes = 8 << 20;
  const auto ring_ns = static_cast<uint64_t>(bytes * 1.5 / 10.0);
  b.coll(ring, "AllReduce", bytes, {{1, 1 + ring_ns}, {1, 1 + ring_ns}, {1, 1 + ring_ns}, {1, 1 + ring_ns}});
  const auto pair_ns = static_cast<uint64_t>(bytes / 20.0);
  b.coll(pair, "AllReduce", bytes, {{1, 1 + pair_ns}, {1, 1 + pair_ns}});
  const std::vector<SlowLinkRow> links = slowLinks(b.run);
  ASSERT_EQ(links.size(), 4u);
  for (const SlowLinkRow& l : links) {
    EXPECT_FALSE(l.flagged) << "within half of the median";
    const bool fast = l.a == 0 && l.b == 1;
    EXPECT_NEAR(l.achieved_gbs, fast ? 20.0 : 10.0, 0.01) << l.a << "-" << l.b;
    EXPECT_EQ(l.ops, fast ? 2u : 1u);
  }
}

TEST(SlowLinks, HealthyLinksFlagNothingAndTooFewLinksGiveNoVerdict) {
  RunModelBuilder b({"n0", "n1"});
  const uint32_t w = b.comm({0, 1}, "w");
  b.p2p(w, "Send", 0, 1, 4 << 20, {1, 1'000'001}, {1, 1'000'001});
  const std::vector<SlowLinkRow> links = slowLinks(b.run);
  ASSERT_EQ(links.size(), 1u);
  EXPECT_FALSE(links.front().flagged);
  EXPECT_NE(evidenceWords(links.front()).find("too few"), std::string::npos) << evidenceWords(links.front());
}

}  // namespace
