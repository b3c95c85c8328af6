#include "tools/report/analyses/wait_attribution.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "tools/report/load/stats.h"

namespace commtrace::report {
namespace {

// A tiny job: each process computes a gap after its previous op, then synchronizes; every
// member leaves at the last arrival plus the op's own time. What it hands the attribution is
// what the loader would (gaps on each process's own clock, arrivals from durations).
struct Sync {
  uint32_t comm = 0;
  std::vector<SyncMember> members;
  uint64_t total_wait_ns = 0;
};

class Job {
 public:
  static constexpr uint64_t kOpNs = 100'000;

  // members: (process, gap before the op in ns).
  Sync sync(uint32_t comm, const std::vector<std::pair<int32_t, uint64_t>>& members) {
    Sync s{comm, {}, 0};
    uint64_t last = 0, first = UINT64_MAX;
    std::vector<uint64_t> arrival;
    for (const auto& [p, gap] : members) {
      arrival.push_back(end_[p] + gap);
      last = std::max(last, arrival.back());
      first = std::min(first, arrival.back());
    }
    for (size_t i = 0; i < members.size(); ++i) {
      const auto [p, gap] = members[i];
      SyncMember m;
      m.comm_rank = static_cast<int32_t>(i);
      m.process = p;
      m.gpu_start_ns = arrival[i];
      m.gpu_end_ns = last + kOpNs;
      m.gap_ns = seen_[p] ? gap : MemberView::kNoGap;
      m.arrival_ns = static_cast<double>(arrival[i] - first);
      m.wait_ns = static_cast<double>(last - arrival[i]);
      s.total_wait_ns += last - arrival[i];
      std::vector<double> others;
      for (size_t j = 0; j < members.size(); ++j)
        if (j != i) others.push_back(static_cast<double>(members[j].second));
      m.peer_gap_ns = percentile(others, 0.5);
      s.members.push_back(m);
    }
    size_t lasts = 0;
    for (const SyncMember& m : s.members) lasts += m.wait_ns < 2048 ? 1 : 0;
    for (SyncMember& m : s.members) m.last_share = m.wait_ns < 2048 ? 1.0 / static_cast<double>(lasts) : 0.0;
    for (const auto& [p, gap] : members) {
      end_[p] = last + kOpNs;
      seen_[p] = true;
    }
    return s;
  }

 private:
  std::map<int32_t, uint64_t> end_;
  std::map<int32_t, bool> seen_;
};

// What the attribution charged, per origin process, and each member's created share.
struct Charged {
  std::map<int32_t, double> wait_ns;
  std::map<int32_t, double> direct_ns;
  std::map<int32_t, double> created;
  double total_wait_ns = 0;
  size_t syncs = 0;  // attributed so far
};

WaitAttribution attributionInto(Charged& out) {
  return WaitAttribution([&out](const Attributed& a) {
    out.total_wait_ns += static_cast<double>(a.total_wait_ns);
    ++out.syncs;
    for (const Attributed::Charge& c : a.charges) {
      out.wait_ns[c.origin.process] += c.wait_ns;
      if (c.direct) out.direct_ns[c.origin.process] += c.wait_ns;
    }
    for (size_t i = 0; i < a.members.size(); ++i) out.created[a.members[i].process] += a.created[i];
  });
}

void feed(WaitAttribution& w, const std::vector<Sync>& syncs) {
  for (const Sync& s : syncs) w.add(s.comm, true, s.members, s.total_wait_ns);
  w.flush();
}

// What may wait at once grows with a wide run (a 16,384-rank run's waiting instances passed
// the 1 M members of a narrow one's cap), never below it.
TEST(WaitAttribution, TheWaitingCapGrowsWithTheRunsWidthOnly) {
  Charged c;
  WaitAttribution w = attributionInto(c);
  EXPECT_EQ(w.maxPendingMembers(), WaitAttribution::kMaxPendingMembers);
  w.runWidth(1024);
  EXPECT_EQ(w.maxPendingMembers(), WaitAttribution::kMaxPendingMembers) << "a narrow run's cap is unchanged";
  w.runWidth(16384);
  EXPECT_EQ(w.maxPendingMembers(), 16384 * WaitAttribution::kPendingMembersPerProcess);
  w.runWidth(2);
  EXPECT_EQ(w.maxPendingMembers(), 16384 * WaitAttribution::kPendingMembersPerProcess) << "never lowered";
}

TEST(WaitAttribution, TheMemberWhoseGapIsLongerCreatedTheWaitOfItsGroup) {
  Job job;
  std::vector<Sync> syncs;
  for (int i = 0; i < 5; ++i) syncs.push_back(job.sync(0, {{0, 1'000'000}, {1, 1'000'000}, {2, 1'300'000}, {3, 1'000'000}}));
  Charged c;
  WaitAttribution w = attributionInto(c);
  feed(w, syncs);
  // The first sync has no gaps to measure (the job's start): charged to nobody.
  const double first_wait = static_cast<double>(syncs.front().total_wait_ns);
  EXPECT_NEAR(c.wait_ns[2], c.total_wait_ns - first_wait, 1);
  EXPECT_NEAR(c.direct_ns[2], c.total_wait_ns - first_wait, 1);
  EXPECT_NEAR(c.created[2], 4, 1e-9);
  EXPECT_EQ(c.wait_ns.count(0), 0u);
}

// Rank 3 is slow in group A = {0, 1, 2, 3}; rank 1 of it is also in pair B = {1, 4}, and
// rank 4 in pair C = {4, 5}. Rank 1 leaves A late (it waited for 3) and is last at B with no
// longer a gap than rank 4's; rank 4 is then last at C: rank 4's wait at B and rank 5's at C
// pass back to rank 3, not to ranks 1 and 4.
std::vector<Sync> tensorTimesData(int steps) {
  Job job;
  std::vector<Sync> syncs;
  for (int i = 0; i < steps; ++i) {
    syncs.push_back(job.sync(0, {{0, 1'000'000}, {1, 800'000}, {2, 1'000'000}, {3, 1'400'000}}));
    syncs.push_back(job.sync(1, {{1, 0}, {4, 0}}));
    syncs.push_back(job.sync(2, {{4, 200'000}, {5, 200'000}}));
  }
  return syncs;
}

TEST(WaitAttribution, AWaitInheritedFromAnEarlierOpPassesBackToWhereTheDelayWasCreated) {
  Charged c;
  WaitAttribution w = attributionInto(c);
  feed(w, tensorTimesData(6));
  double charged = 0;
  for (const auto& [process, wait] : c.wait_ns) charged += wait;
  // Ranks 4 and 5 would wait at B and C without rank 3's delay too (they have less to do):
  // that part is the job's shape, charged to nobody; what rank 3 held them up is charged to it.
  EXPECT_GT(charged, 0.4 * c.total_wait_ns);
  EXPECT_GT(c.wait_ns[3], 0.99 * charged) << "rank 3 created every delay";
  EXPECT_LT(c.wait_ns[1] + c.wait_ns[4], 0.01 * charged) << "ranks 1 and 4 only passed rank 3's delay on";
  EXPECT_NEAR(c.created[1], 0, 1e-9);
  EXPECT_NEAR(c.created[4], 0, 1e-9);
  EXPECT_GT(c.wait_ns[3], c.direct_ns[3] * 1.1) << "part of it long-term: rank 4's waits at the pair";
}

// Each communicator's ops issued under a path of their own: the waits at B and C that rank
// 3's delays passed on are charged to the path of A's op, before which it created them.
TEST(WaitAttribution, AWaitPassedBackIsChargedToThePathOfTheOpTheDelayWasCreatedBefore) {
  constexpr NameId kPathOf[] = {11, 22, 33};
  std::map<NameId, double> by_path;
  double direct_elsewhere = 0, passed_back = 0, charged = 0;
  WaitAttribution w([&](const Attributed& a) {
    for (const Attributed::Charge& c : a.charges) {
      by_path[c.path] += c.wait_ns;
      charged += c.wait_ns;
      if (a.comm != 0) (c.direct ? direct_elsewhere : passed_back) += c.wait_ns;
    }
  });
  for (const Sync& s : tensorTimesData(6)) w.add(s.comm, true, s.members, s.total_wait_ns, 0, false, {kPathOf[s.comm], kPathOf[s.comm]});
  w.flush();
  ASSERT_GT(charged, 0);
  EXPECT_GT(by_path[11], 0.99 * charged);
  EXPECT_LT(direct_elsewhere, 0.01 * charged);
  EXPECT_GT(passed_back, 0.05 * charged) << "some of it is waited at B and C";
}

// Where a seat created delays before ops of two paths, its blame carries the path of its
// larger share.
TEST(WaitAttribution, ASeatsBlameCarriesThePathOfItsLargerShare) {
  Blame b;
  b.add(DelayOrigin{0, 1, 1}, 1.0, 7);
  b.add(DelayOrigin{0, 1, 1}, 3.0, 8);
  b.add(DelayOrigin{0, 1, 1}, 0.5, 9);
  b.normalize();
  ASSERT_EQ(b.parts().size(), 1u);
  EXPECT_EQ(b.parts().front().path, 8u);
}

TEST(WaitAttribution, TheOrderTheOpsComeInDoesNotChangeTheAttribution) {
  const std::vector<Sync> in_order = tensorTimesData(6);
  std::vector<Sync> shuffled = in_order;
  // Every communicator's instances together, as a run of one-chunk files is joined.
  std::stable_sort(shuffled.begin(), shuffled.end(), [](const Sync& a, const Sync& b) { return a.comm > b.comm; });
  Charged a, b;
  WaitAttribution wa = attributionInto(a), wb = attributionInto(b);
  feed(wa, in_order);
  feed(wb, shuffled);
  for (const auto& [process, wait] : a.wait_ns) EXPECT_NEAR(b.wait_ns[process], wait, 1) << process;
  EXPECT_NEAR(a.total_wait_ns, b.total_wait_ns, 1);
}

// Hundreds of a process's ops waiting at once (a small job's long run read a chunk of
// thousands of ops at a time): past a few, the waiters are filed by the op they wait for;
// they are woken in the order they came, and the attribution is the same as in order.
TEST(WaitAttribution, HundredsOfOpsWaitingAtOnceAreAttributedAsInOrder) {
  const std::vector<Sync> in_order = tensorTimesData(300);
  std::vector<Sync> shuffled = in_order;
  std::stable_sort(shuffled.begin(), shuffled.end(), [](const Sync& a, const Sync& b) { return a.comm > b.comm; });
  Charged a, b;
  WaitAttribution wa = attributionInto(a), wb = attributionInto(b);
  feed(wa, in_order);
  for (const Sync& s : shuffled) wb.add(s.comm, true, s.members, s.total_wait_ns);
  // Each went on once the op it waited for came, not at the end in program order.
  EXPECT_EQ(b.syncs, shuffled.size());
  wb.flush();
  ASSERT_GT(a.wait_ns[3], 0);
  for (const auto& [process, wait] : a.wait_ns) EXPECT_NEAR(b.wait_ns[process], wait, 1e-9 * wait + 1) << process;
  for (const auto& [process, created] : a.created) EXPECT_NEAR(b.created[process], created, 1e-9) << process;
  EXPECT_NEAR(a.total_wait_ns, b.total_wait_ns, 1);
}

TEST(WaitAttribution, AGapThatExplainsHalfTheLatenessCreatesHalfOfIt) {
  Job job;
  std::vector<Sync> syncs;
  syncs.push_back(job.sync(0, {{0, 0}, {1, 0}}));
  syncs.push_back(job.sync(1, {{2, 0}, {3, 0}}));
  syncs.push_back(job.sync(0, {{0, 1'000'000}, {1, 1'200'000}}));  // rank 1 made rank 0 wait 200 us, its own delay
  // Rank 1 leaves with rank 0 200 us late; against rank 2 it is 400 us later: 200 us from
  // pair 0's wait, 200 us its own longer gap.
  syncs.push_back(job.sync(1, {{2, 1'000'000}, {3, 1'000'000}}));
  syncs.push_back(job.sync(2, {{1, 1'200'000}, {2, 1'000'000}}));
  Charged c;
  WaitAttribution w = attributionInto(c);
  feed(w, syncs);
  // The last pair: rank 2 waited 400 us, half created by rank 1's gap there, half passed
  // back to where rank 1 was late before, which was rank 1 itself.
  EXPECT_NEAR(c.created[1], 1.0 + 0.5, 0.01) << "all of pair 0's second, half of the last";
  EXPECT_NEAR(c.wait_ns[1], c.total_wait_ns, 1);
}

TEST(WaitAttribution, AnOpThatDoesNotSynchronizePassesBlameOn) {
  Job job;
  std::vector<Sync> syncs = {job.sync(0, {{0, 0}, {1, 0}}), job.sync(0, {{0, 1'000'000}, {1, 1'500'000}})};
  const Sync broadcast = job.sync(1, {{0, 0}});  // rank 0 alone: it only passes blame on
  const Sync pair = job.sync(2, {{0, 1'000'000}, {2, 1'000'000}});
  Charged c;
  WaitAttribution w = attributionInto(c);
  for (const Sync& s : syncs) w.add(s.comm, true, s.members, s.total_wait_ns);
  w.add(broadcast.comm, false, broadcast.members, 0);
  w.add(pair.comm, true, pair.members, pair.total_wait_ns);
  w.flush();
  // Rank 0 waited 500 us for rank 1 at the second pair, and came to the last pair 500 us later
  // for it, through the broadcast: that much of rank 2's wait there is rank 1's; the rest of
  // it rank 2 would have waited anyway (its first op, nothing to do before it).
  EXPECT_NEAR(c.wait_ns[1], 1'000'000, 1);
  EXPECT_EQ(c.wait_ns.count(0), 0u);
}

TEST(WaitAttribution, BlameKeepsItsLargestPartsAndSumsToOne) {
  Blame b;
  for (int i = 0; i < 8; ++i) b.add(DelayOrigin{0, i, i}, 1.0 + i, 0);
  b.normalize();
  ASSERT_EQ(b.parts().size(), Blame::kParts);
  double sum = 0;
  for (const Blame::Part& p : b.parts()) sum += p.share;
  EXPECT_NEAR(sum, 1.0, 1e-6);
  EXPECT_EQ(b.parts().front().origin.process, 7);
  EXPECT_GT(b.parts().front().share, b.parts().back().share);
}

// The replay: rank 3's 400 us of extra gap before each of group A's ops sets the pace of the
// whole job (B and C hang off A), so fixing it saves 400 us of each 1.5 ms round.
TEST(WaitAttribution, TheReplaySavesWhatRemovingTheCandidatesDelaysWouldSave) {
  const std::vector<Sync> syncs = tensorTimesData(20);
  Charged c;
  WaitAttribution w = attributionInto(c);
  w.addCandidate({3});
  w.addCandidate({1});
  w.addCandidate({3});  // already one
  feed(w, syncs);
  const std::vector<ImpactEstimate> impacts = w.impacts();
  ASSERT_EQ(impacts.size(), 2u);
  EXPECT_NEAR(impacts[0].saved_share, 0.4 / 1.5, 0.02);
  EXPECT_EQ(impacts[0].syncs, syncs.size());
  EXPECT_NEAR(impacts[1].saved_share, 0, 1e-9) << "rank 1 created nothing";
}

// Once every op is in, the walk's state for ops to come is freed (a report holds it no more),
// and what it found stays as it was.
TEST(WaitAttribution, ReleasingTheWalkKeepsItsFigures) {
  const std::vector<Sync> syncs = tensorTimesData(20);
  Charged c;
  WaitAttribution w = attributionInto(c);
  w.addCandidate({3});
  feed(w, syncs);
  const std::vector<ImpactEstimate> before = w.impacts();
  const RoleGaps::ProcessSums sums = w.roleGaps().sums();
  const size_t attributed = c.syncs;
  w.releaseWalk();
  const std::vector<ImpactEstimate> after = w.impacts();
  ASSERT_EQ(after.size(), before.size());
  EXPECT_EQ(after[0].saved_share, before[0].saved_share);
  EXPECT_EQ(after[0].syncs, before[0].syncs);
  EXPECT_EQ(w.roleGaps().sums().size(), sums.size());
  EXPECT_EQ(w.queued(), 0u);
  EXPECT_EQ(c.syncs, attributed) << "nothing attributed again";
  EXPECT_EQ(attributed, syncs.size());
}

// A member as the loader would hand it: GPU span, gap (kNoGap: its first op), arrival and
// wait from durations, its share of the last arrival.
SyncMember member(int32_t rank, int32_t process, uint64_t start, uint64_t end, uint64_t gap, double arrival, double wait, double last,
                  double peer_gap) {
  SyncMember m;
  m.comm_rank = rank, m.process = process, m.gpu_start_ns = start, m.gpu_end_ns = end, m.gap_ns = gap;
  m.arrival_ns = arrival, m.wait_ns = wait, m.last_share = last, m.peer_gap_ns = peer_gap;
  return m;
}

// Process 0 runs an op on a second stream (Y) that started before, and was attributed after,
// the op its next op's gap is measured from (S1): the ledger is then out of order, and the
// op before its next start is still the one that ended last (S1, which carries process 2's
// blame), not the newest that started earlier (Y, which carries none).
TEST(WaitAttribution, TheOpBeforeAStartIsTheOneThatEndedLastWhateverOrderTheyCameIn) {
  Charged c;
  WaitAttribution w = attributionInto(c);
  constexpr uint64_t kNo = MemberView::kNoGap;
  // S0: everyone's first op, [0, 1000] us.
  const std::vector<SyncMember> s0 = {member(0, 0, 0, 1'000'000, kNo, 0, 0, 1.0 / 4, -1), member(1, 1, 0, 1'000'000, kNo, 0, 0, 1.0 / 4, -1),
                                      member(2, 2, 0, 1'000'000, kNo, 0, 0, 1.0 / 4, -1), member(3, 3, 0, 1'000'000, kNo, 0, 0, 1.0 / 4, -1)};
  w.add(0, true, s0, 0);
  // S1 (processes 0-2): process 2 starts 500 us late after the same 100 us gap's worth of work
  // its peers did (its gap 600 us against their 100): it created the others' wait.
  const std::vector<SyncMember> s1 = {member(0, 0, 1'100'000, 1'700'000, 100'000, 0, 500'000, 0, 100'000),
                                      member(1, 1, 1'100'000, 1'700'000, 100'000, 0, 500'000, 0, 100'000),
                                      member(2, 2, 1'600'000, 1'700'000, 600'000, 500'000, 0, 1, 100'000)};
  w.add(1, true, s1, 1'000'000);
  // Y: process 0's op on another stream, [1050, 1090] us, after S0 and so blamed on nobody.
  const std::vector<SyncMember> y = {member(0, 0, 1'050'000, 1'090'000, 50'000, 0, 0, 0, -1)};
  w.add(5, false, y, 0);
  ASSERT_GT(c.direct_ns[2], 0) << "process 2 created S1's wait";
  const double before = c.wait_ns[2];
  // S2 (processes 0 and 3): process 0 arrives 700 us after process 3 with the same gap: held
  // up by S1, where process 2's delay was created.
  const std::vector<SyncMember> s2 = {member(0, 0, 1'800'000, 1'900'000, 100'000, 700'000, 0, 1, 100'000),
                                      member(1, 3, 1'100'000, 1'900'000, 100'000, 0, 700'000, 0, 100'000)};
  w.add(2, true, s2, 700'000);
  w.flush();
  EXPECT_GT(c.wait_ns[2] - before, 0) << "S2's wait passed back through S1 to process 2";
  EXPECT_EQ(c.wait_ns.count(0), 0u) << "process 0 only passed the delay on";
}

// Processes 0 and 1 synchronizing long after everything else, process 1 with `gap` before it
// measured from an op of its that never comes.
Sync stuckFarLater(uint64_t gap) {
  Job later;
  Sync stuck = later.sync(0, {{0, 5000}, {1, 5000}});
  for (SyncMember& m : stuck.members) m.gpu_start_ns += 1'000'000'000'000, m.gpu_end_ns += 1'000'000'000'000;
  stuck.members[1].gap_ns = gap;
  return stuck;
}

// An instance whose predecessor never joins waits at the front of its process's queue for
// the whole run; the instances queued behind it that have since proceeded are dropped as the
// queue doubles, so what is held stays bounded by what waits, not the run's length.
TEST(WaitAttribution, AnOpWaitingForTheWholeRunDoesNotHoldTheQueuesBehindIt) {
  Charged c;
  WaitAttribution w = attributionInto(c);
  // Process 1's op that waits for an op of its that never comes (ended 1 us before it
  // started), long after the others (so none of them is measured from it).
  Job job;
  const Sync stuck = stuckFarLater(1000);
  w.add(stuck.comm, true, stuck.members, stuck.total_wait_ns);
  double total_wait_ns = static_cast<double>(stuck.total_wait_ns);
  // Then 5,000 pairs of ops handed in the wrong order: each second one waits for the first.
  for (int i = 0; i < 5000; ++i) {
    const Sync first = job.sync(1, {{1, 5000}, {2, 7000}});
    const Sync second = job.sync(1, {{1, 5000}, {2, 7000}});
    w.add(second.comm, true, second.members, second.total_wait_ns);
    w.add(first.comm, true, first.members, first.total_wait_ns);
    total_wait_ns += static_cast<double>(first.total_wait_ns + second.total_wait_ns);
  }
  EXPECT_LT(w.queued(), 300u) << "5,000 proceeded waits behind the stuck one would be 10,000 entries";
  w.flush();
  EXPECT_DOUBLE_EQ(c.total_wait_ns, total_wait_ns) << "every instance attributed, the stuck one at the end";
}

// An op whose predecessor never joins proceeds once its process has had kPatience more ops,
// not at the stream's end; one that waited and proceeded before it, still at the front of
// its process's queue, neither holds it up nor proceeds twice.
TEST(WaitAttribution, AnOpWhosePredecessorNeverComesProceedsAfterItsPatience) {
  size_t attributed = 0;
  WaitAttribution w([&](const Attributed&) { ++attributed; });
  Job job;
  const Sync first = job.sync(1, {{1, 5000}, {2, 7000}});
  const Sync second = job.sync(1, {{1, 5000}, {2, 7000}});
  w.add(second.comm, true, second.members, second.total_wait_ns);
  w.add(first.comm, true, first.members, first.total_wait_ns);
  ASSERT_EQ(attributed, 2u) << "the second waited for the first, then went";
  const Sync stuck = stuckFarLater(1000);  // process 1's third op
  w.add(stuck.comm, true, stuck.members, stuck.total_wait_ns);
  for (uint64_t i = 0; i + 1 < WaitAttribution::kPatience; ++i) {
    const Sync s = job.sync(1, {{1, 5000}, {2, 7000}});
    w.add(s.comm, true, s.members, s.total_wait_ns);
  }
  EXPECT_EQ(attributed, 2 + WaitAttribution::kPatience - 1) << "the stuck op still waits";
  const Sync s = job.sync(1, {{1, 5000}, {2, 7000}});
  w.add(s.comm, true, s.members, s.total_wait_ns);
  EXPECT_EQ(attributed, 2 + WaitAttribution::kPatience + 1) << "kPatience ops of its process later, it proceeded";
  w.flush();
  EXPECT_EQ(attributed, 2 + WaitAttribution::kPatience + 1) << "once";
}

// An op whose gap is 0 waits for any op of its process still running at its start; each op
// of that process that ends wakes it, and it waits again. It was queued once more each time,
// so one such op that never found its predecessor held an entry per later op of its process
// (a driver-played run of 20,000 steps: 67M entries, 0.9 GB).
TEST(WaitAttribution, AnOpWokenAgainAndAgainIsQueuedOnce) {
  Charged c;
  WaitAttribution w = attributionInto(c);
  Job job;
  const Sync stuck = stuckFarLater(0);  // "an op still ran at its start": none ever does
  w.add(stuck.comm, true, stuck.members, stuck.total_wait_ns);
  for (int i = 0; i < 5000; ++i) {
    const Sync s = job.sync(1, {{1, 5000}, {2, 7000}});
    w.add(s.comm, true, s.members, s.total_wait_ns);
  }
  EXPECT_LT(w.queued(), 300u) << "woken by 5,000 ops and queued each time: 5,000 entries";
  w.flush();
  EXPECT_GT(c.total_wait_ns, 0);
}

// A waiter is woken by the op its gap is measured from even when that op took no time (it
// starts and ends at the waiter's key): the waiters' key bounds must not pass it by.
TEST(WaitAttribution, AnOpOfNoDurationWakesWhatWaitsForIt) {
  Charged c;
  WaitAttribution w = attributionInto(c);
  // Process 0's next op starts 50 ns after an op of process 0 not seen yet, which ran at 1,000 ns.
  const std::vector<SyncMember> later = {member(0, 0, 1'050, 2'000, 50, 0, 0, 1, 50), member(1, 1, 1'000, 2'000, MemberView::kNoGap, 0, 0, 0, -1)};
  w.add(0, true, later, 0);
  ASSERT_GT(w.queued(), 0u) << "it waits for process 0's earlier op";
  ASSERT_EQ(c.syncs, 0u);
  const std::vector<SyncMember> instant = {member(0, 0, 1'000, 1'000, MemberView::kNoGap, 0, 0, 0, -1)};
  w.add(1, false, instant, 0);
  EXPECT_EQ(c.syncs, 1u) << "the op it waited for came: it went on and was attributed";
}

TEST(RoleGaps, TheTypicalGapIsTheMedianOfTheOthersInTheRole) {
  RoleGaps roles;
  const RoleGaps::Id send = roles.idOf(RoleGaps::keyOf({true, 1024, 8, 2, 3}));
  for (uint64_t g = 1; g <= 5; ++g) roles.note(send, 1, 0, g * 1000);
  EXPECT_EQ(roles.soloPlays(send, 1), 5u) << "its five plays, alone in the role";
  EXPECT_EQ(roles.soloPlays(send, 2), std::nullopt) << "for a process that has not played it, process 1 is another";
  EXPECT_EQ(roles.soloPlays(roles.idOf(RoleGaps::keyOf({true, 1024, 8, 5, 6})), 2), 0u) << "a role nobody played";
  EXPECT_DOUBLE_EQ(roles.typicalNs(send, 1), 3000) << "no other plays it: its own past";
  roles.note(send, 2, 0, 9000);
  EXPECT_EQ(roles.soloPlays(send, 1), std::nullopt) << "process 2 plays it too";
  EXPECT_DOUBLE_EQ(roles.typicalNs(send, 2), 3000) << "process 1's gaps, not its own";
  EXPECT_DOUBLE_EQ(roles.typicalNs(send, 1), 9000) << "process 2's";
  EXPECT_EQ(roles.typicalNs(roles.idOf(RoleGaps::keyOf({false, 1024, 8, 3, 2})), 1), -1) << "a receive is another role";
  EXPECT_EQ(roles.typicalNs(roles.idOf(RoleGaps::keyOf({true, 1024, 8, 3, 4})), 1), -1) << "so is the next stage's send";
  for (int i = 0; i < 100; ++i) roles.note(send, 3, 0, 7000);
  EXPECT_DOUBLE_EQ(roles.typicalNs(send, 1), 7000) << "process 3's latest four and process 2's one";
  EXPECT_DOUBLE_EQ(roles.typicalNs(send, 3), 4000) << "a burst of process 3's plays kept the others' latest: 2-5 and 9 us";
  EXPECT_EQ(roles.typicalNs(roles.idOf(RoleGaps::keyOf({true, 1024, 8, 7, 7})), 1, /*own_past=*/false), -1) << "nobody else plays it";
  // Summed whole, whatever the order: process 1's gaps (1-5 us) against the others' means.
  const auto excess = RoleGaps::excessByProcess(roles.sums());
  ASSERT_EQ(excess.count(1), 1u);
  EXPECT_DOUBLE_EQ(excess.at(1).n, 5);
  EXPECT_NEAR(excess.at(1).sum_us, 15 - 5 * 7, 1e-9) << "the median of 9 and 7 us is 7 us (nearest rank)";
  for (uint64_t g = 1; g <= 5; ++g) roles.note(send, 1, 0, 100 * g);
  EXPECT_DOUBLE_EQ(roles.typicalNs(send, 3), 400) << "only each process's latest four are kept: 0.2-0.5 and 9 us";
}

}  // namespace
}  // namespace commtrace::report
