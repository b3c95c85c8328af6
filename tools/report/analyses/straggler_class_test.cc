#include "tools/report/analyses/straggler_class.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "tools/report/load/op_stream.h"
#include "tools/report/load/width_budget.h"

namespace commtrace::report {
namespace {

// Process 1 arrives last at a two-member synchronization starting at `start_ns`, having
// created its delay: its gap `gap_us` against its peer's `peer_gap_us`.
void addDelay(StragglerEvidence& evidence, uint64_t start_ns, double gap_us, double peer_gap_us) {
  std::vector<SyncMember> members(2);
  members[0].process = 0;
  members[0].gap_ns = static_cast<uint64_t>(peer_gap_us * 1e3);
  members[1].process = 1;
  members[1].gpu_start_ns = start_ns;
  members[1].gap_ns = static_cast<uint64_t>(gap_us * 1e3);
  members[1].peer_gap_ns = peer_gap_us * 1e3;
  members[1].arrival_ns = (gap_us - peer_gap_us) * 1e3;
  members[1].last_share = 1;
  const std::vector<double> created = {0, 1};
  Attributed a;
  a.members = members;
  a.created = created;
  evidence.add(a);
}

StragglerEvidence::Gaps gapsOf(const StragglerEvidence& evidence, size_t process) {
  StragglerEvidence::Gaps gaps;
  evidence.processes()[process].mergeGapsInto(gaps);
  return gaps;
}

// Gaps go into the sketches a few at a time: whatever is still staged counts when they are
// read, and when one process's evidence is merged into another's.
TEST(StragglerEvidence, EveryDelayCountsWhetherItsGapsAreStagedOrNot) {
  StragglerEvidence one, two;
  for (int i = 1; i <= 11; ++i) addDelay(one, 1000 * i, 100 + i, 100);  // 8 moved on, 3 staged
  for (int i = 12; i <= 13; ++i) addDelay(two, 1000 * i, 100 + i, 100);
  const StragglerEvidence::Gaps gaps = gapsOf(one, 1);
  EXPECT_EQ(gaps.gap_us.count(), 11u);
  EXPECT_DOUBLE_EQ(gaps.gap_us.quantile(1.0), 111) << "the last, staged, among them";
  EXPECT_DOUBLE_EQ(gaps.excess_us.quantile(0.5), 6);
  EXPECT_DOUBLE_EQ(gaps.peer_gap_us.quantile(0.5), 100);
  EXPECT_EQ(gapsOf(one, 0).gap_us.count(), 0u) << "process 0 only waited";
  one.merge(two);
  const StragglerEvidence::Gaps merged = gapsOf(one, 1);
  EXPECT_EQ(merged.gap_us.count(), 13u);
  EXPECT_DOUBLE_EQ(merged.lateness_us.quantile(1.0), 13) << "two's staged delays merged";
  EXPECT_EQ(one.syncs()[1], 13u);
}

std::vector<uint64_t> sampledHashes(const StragglerEvidence& evidence) {
  std::vector<uint64_t> out;
  for (const StragglerEvidence::LateArrival& late : evidence.processes()[1].sample.items()) out.push_back(late.hash);
  std::sort(out.begin(), out.end());
  return out;
}

// The sample is the kSampled late arrivals with the smallest hashes, whatever order they came
// in and however the evidence was split and merged, and each keeps its own fields.
TEST(StragglerEvidence, TheSampleIsTheSmallestHashesWhateverTheOrder) {
  constexpr int kArrivals = 3000;
  StragglerEvidence forward, backward, first_half, second_half;
  for (int i = 0; i < kArrivals; ++i) {
    addDelay(forward, 1000 * static_cast<uint64_t>(i + 1), 200 + i % 50, 100);
    addDelay(backward, 1000 * static_cast<uint64_t>(kArrivals - i), 200 + (kArrivals - 1 - i) % 50, 100);
    addDelay(i % 2 == 0 ? first_half : second_half, 1000 * static_cast<uint64_t>(i + 1), 200 + i % 50, 100);
  }
  first_half.merge(second_half);
  std::vector<uint64_t> smallest;
  for (int i = 0; i < kArrivals; ++i) smallest.push_back(instanceHash(0, 1, 1000 * static_cast<uint64_t>(i + 1)));
  std::sort(smallest.begin(), smallest.end());
  smallest.resize(StragglerEvidence::kSampled);
  EXPECT_EQ(sampledHashes(forward), smallest);
  EXPECT_EQ(sampledHashes(backward), smallest);
  EXPECT_EQ(sampledHashes(first_half), smallest);
  for (const StragglerEvidence::LateArrival& late : forward.processes()[1].sample.items()) {
    EXPECT_EQ(late.hash, instanceHash(0, 1, late.gpu_start_ns)) << "a seat taken over keeps no field of its old tenant";
    const uint64_t i = late.gpu_start_ns / 1000 - 1;
    EXPECT_EQ(late.gap_ns, (200 + i % 50) * 1000);
    ASSERT_EQ(late.peers.size(), 1u);
    EXPECT_EQ(late.peers[0].process, 0);
  }
}

// Past 1,024 processes the sample halves as the width doubles (width_budget.h): told before
// or after the first delays, or merged with a shard told, it is the smallest hashes at the
// smaller size; told 1,024, it stays whole.
TEST(StragglerEvidence, AWideRunsSampleIsTheSmallestHashesAtASmallerSize) {
  constexpr int kArrivals = 1000;
  StragglerEvidence told_first, told_later, merged, narrow;
  told_first.runWidth(4096);
  narrow.runWidth(1024);
  StragglerEvidence shard;
  shard.runWidth(4096);
  for (int i = 0; i < kArrivals; ++i) {
    const uint64_t start = 1000 * static_cast<uint64_t>(i + 1);
    for (StragglerEvidence* e : {&told_first, &told_later, &narrow}) addDelay(*e, start, 200, 100);
    addDelay(i % 2 == 0 ? merged : shard, start, 200, 100);
  }
  told_later.runWidth(4096);
  merged.merge(shard);
  std::vector<uint64_t> smallest;
  for (int i = 0; i < kArrivals; ++i) smallest.push_back(instanceHash(0, 1, 1000 * static_cast<uint64_t>(i + 1)));
  std::sort(smallest.begin(), smallest.end());
  EXPECT_EQ(told_first.sampled(), StragglerEvidence::kSampled / 4);
  EXPECT_EQ(told_first.peersKept(), StragglerEvidence::kFewestPeersKept);
  EXPECT_EQ(narrow.sampled(), StragglerEvidence::kSampled);
  EXPECT_EQ(narrow.peersKept(), StragglerEvidence::kPeersKept);
  EXPECT_EQ(sampledHashes(narrow).size(), StragglerEvidence::kSampled);
  smallest.resize(StragglerEvidence::kSampled / 4);
  EXPECT_EQ(sampledHashes(told_first), smallest);
  EXPECT_EQ(sampledHashes(told_later), smallest);
  EXPECT_EQ(sampledHashes(merged), smallest);
  told_first.runWidth(1 << 20);
  EXPECT_EQ(told_first.sampled(), StragglerEvidence::kFewestSampled) << "never under the floor";
}

TEST(WidthBudget, FullUpTo1024ProcessesThenHalvedPerDoublingDownToTheFloor) {
  EXPECT_EQ(keptAtWidth(256, 1, 32), 256u);
  EXPECT_EQ(keptAtWidth(256, 1024, 32), 256u);
  EXPECT_EQ(keptAtWidth(256, 1025, 32), 128u);
  EXPECT_EQ(keptAtWidth(256, 2048, 32), 128u);
  EXPECT_EQ(keptAtWidth(256, 2049, 32), 64u);
  EXPECT_EQ(keptAtWidth(256, 16384, 32), 32u);
  EXPECT_EQ(keptAtWidth(256, 65536, 32), 32u);
  EXPECT_EQ(keptAtWidth(16, 65536, 32), 16u) << "a floor over the full size keeps the full size";
}

}  // namespace
}  // namespace commtrace::report
