// The instance index: what it finds, and that what it holds follows the open instances,
// not the run's length.
#include "tools/report/load/instance_index.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

namespace commtrace::report {
namespace {

using Key = InstanceIndex::Key;

TEST(InstanceIndex, FindsWhatWasStoredUntilClosedThenClosed) {
  InstanceIndex index;
  const Key allreduce{0, 5, 7}, allgather{0, 6, 7}, other_comm{1, 5, 7}, replay{0, InstanceIndex::kByOpIndex, 7};
  EXPECT_EQ(index.find(allreduce), InstanceIndex::kNone);
  index.store(allreduce, 11);
  index.store(replay, 12);
  EXPECT_EQ(index.find(allreduce), 11u);
  EXPECT_EQ(index.find(replay), 12u);
  EXPECT_EQ(index.find(allgather), InstanceIndex::kNone) << "seqs count per (comm, func)";
  EXPECT_EQ(index.find(other_comm), InstanceIndex::kNone);
  index.close(allreduce);
  EXPECT_EQ(index.find(allreduce), InstanceIndex::kClosed);
  EXPECT_EQ(index.find(replay), 12u);
}

// A run a thousand times longer than a block holds only the blocks its open instances
// touch: batches of 256 instances, each closed in a shuffled order while the next is open.
TEST(InstanceIndex, HoldsTheOpenInstancesNotTheRun) {
  InstanceIndex index;
  constexpr uint64_t kInstances = 1 << 20, kBatch = 256;
  std::mt19937_64 rng(3);
  std::vector<uint64_t> batch(kBatch);
  size_t most_held = 0;
  for (uint64_t seq = 0; seq < kInstances; ++seq) {
    index.store({2, 9, seq}, static_cast<uint32_t>(seq % 1000));
    if (seq % kBatch != kBatch - 1 || seq + 1 < 2 * kBatch) continue;
    std::iota(batch.begin(), batch.end(), seq + 1 - 2 * kBatch);  // the batch before this one
    std::shuffle(batch.begin(), batch.end(), rng);
    for (uint64_t s : batch) index.close({2, 9, s});
    most_held = std::max(most_held, index.heldSlots());
  }
  EXPECT_LE(most_held, 2u * 1024) << "512 consecutive open instances span at most 2 blocks";
  for (uint64_t seq = kInstances - kBatch; seq < kInstances; ++seq) index.close({2, 9, seq});
  EXPECT_EQ(index.heldSlots(), 0u);
  for (uint64_t seq : {uint64_t{0}, uint64_t{1023}, uint64_t{1024}, kInstances - 1})
    EXPECT_EQ(index.find({2, 9, seq}), InstanceIndex::kClosed) << seq << ": a record after its instance closed repeats one";
  EXPECT_EQ(index.find({2, 9, kInstances}), InstanceIndex::kNone);
}

// A block with one instance never completed (a rank lost it) stays; the others go.
TEST(InstanceIndex, ABlockWithAnInstanceStillOpenStays) {
  InstanceIndex index;
  for (uint64_t seq = 0; seq < 4096; ++seq) index.store({0, 1, seq}, 1);
  for (uint64_t seq = 0; seq < 4096; ++seq)
    if (seq != 2000) index.close({0, 1, seq});
  EXPECT_EQ(index.heldSlots(), 1024u);
  EXPECT_EQ(index.find({0, 1, 2000}), 1u);
}

// A seq far past the dense range (damage, a foreign counter) is kept aside, not by growing
// the blocks to reach it, and still found once the dense range has grown past it.
TEST(InstanceIndex, AFarValueIsKeptAsideAndStillFound) {
  InstanceIndex index;
  const uint64_t far = uint64_t{1} << 40;
  index.store({0, 1, far}, 42);
  EXPECT_EQ(index.heldSlots(), 0u);
  EXPECT_EQ(index.find({0, 1, far}), 42u);
  const uint64_t near_far = 3u << 20;  // beyond the dense range when stored
  index.store({0, 1, near_far}, 43);
  for (uint64_t seq = 0; seq < near_far; seq += 1u << 19) index.store({0, 1, seq}, 1);  // the dense range grows past it
  EXPECT_EQ(index.find({0, 1, near_far}), 43u);
  index.close({0, 1, near_far});
  EXPECT_EQ(index.find({0, 1, near_far}), InstanceIndex::kClosed);
}

// A communicator with few ops (a file of 100,000 communicators with one each) takes no block:
// each took a 4 KB block before, 400 MB for that file. Past kFew instances it takes blocks,
// and what it held in its list is found there.
TEST(InstanceIndex, ACommunicatorWithFewOpsTakesNoBlock) {
  InstanceIndex index;
  for (uint32_t comm = 0; comm < 100'000; ++comm) {
    index.store({comm, 1, 0}, comm);
    index.close({comm, 1, 0});
  }
  EXPECT_EQ(index.heldSlots(), 0u);
  EXPECT_EQ(index.find({99'999, 1, 0}), InstanceIndex::kClosed);
  EXPECT_EQ(index.find({99'999, 1, 1}), InstanceIndex::kNone);

  for (uint64_t seq = 0; seq < 100; ++seq) index.store({7, 2, seq}, static_cast<uint32_t>(seq));
  index.close({7, 2, 3});
  EXPECT_EQ(index.heldSlots(), 1024u) << "past the few: one block";
  EXPECT_EQ(index.find({7, 2, 3}), InstanceIndex::kClosed);
  EXPECT_EQ(index.find({7, 2, 31}), 31u) << "moved from the list";
  EXPECT_EQ(index.find({7, 2, 99}), 99u);
}

}  // namespace
}  // namespace commtrace::report
