#include "tools/report/load/bottom_k.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

namespace commtrace::report {
namespace {

struct Item {
  uint64_t hash = 0;
  std::vector<int> payload;
};

std::vector<uint64_t> keptHashes(const BottomK<Item>& sample) {
  std::vector<uint64_t> out;
  for (const Item& item : sample.items()) out.push_back(item.hash);
  std::sort(out.begin(), out.end());
  return out;
}

TEST(BottomK, KeepsTheSmallestHashesWhateverTheOrder) {
  std::vector<uint64_t> hashes(1000);
  std::iota(hashes.begin(), hashes.end(), uint64_t{100});
  const std::vector<uint64_t> smallest = {100, 101, 102, 103, 104, 105, 106, 107};
  for (uint64_t seed : {1, 2, 3}) {
    std::shuffle(hashes.begin(), hashes.end(), std::mt19937_64(seed));
    BottomK<Item> sample;
    for (uint64_t h : hashes) sample.offer(h, smallest.size(), Item{h, {}});
    EXPECT_EQ(keptHashes(sample), smallest) << "seed " << seed;
  }
  BottomK<Item> descending;
  for (auto h = hashes.size() + 100; h-- > 100;) descending.offer(h, smallest.size(), Item{h, {}});
  EXPECT_EQ(keptHashes(descending), smallest);
}

TEST(BottomK, CutToASmallerSizeMidwayKeepsWhatThatSizeKeptThroughout) {
  std::mt19937_64 rng(11);
  std::vector<uint64_t> hashes(3000);
  for (uint64_t& h : hashes) h = rng();
  BottomK<Item> small, cut;
  for (uint64_t h : hashes) small.offer(h, 16, Item{h, {static_cast<int>(h % 97)}});
  for (size_t i = 0; i < hashes.size(); ++i) {
    const size_t k = i < hashes.size() / 2 ? 64 : 16;
    if (i == hashes.size() / 2) cut.trim(16);
    cut.offer(hashes[i], k, Item{hashes[i], {static_cast<int>(hashes[i] % 97)}});
  }
  EXPECT_EQ(keptHashes(cut), keptHashes(small));
  for (const Item& item : cut.items()) EXPECT_EQ(item.payload, std::vector<int>{static_cast<int>(item.hash % 97)});
  cut.trim(4);  // and the heap stays one: a lighter newcomer still displaces the heaviest
  cut.offer(0, 4, Item{0, {}});
  std::vector<uint64_t> four = keptHashes(small);
  four.resize(3);
  four.insert(four.begin(), 0);
  EXPECT_EQ(keptHashes(cut), four);
}

TEST(BottomK, ShardsMergedKeepWhatTheWholeKeeps) {
  std::mt19937_64 rng(7);
  std::vector<uint64_t> hashes(5000);
  for (uint64_t& h : hashes) h = rng();
  constexpr size_t k = 64;
  BottomK<Item> whole, first, second;
  for (size_t i = 0; i < hashes.size(); ++i) {
    whole.offer(hashes[i], k, Item{hashes[i], {}});
    (i % 3 == 0 ? first : second).offer(hashes[i], k, Item{hashes[i], {}});
  }
  for (const Item& item : second.items()) first.offer(item.hash, k, item);
  EXPECT_EQ(keptHashes(first), keptHashes(whole));
  EXPECT_EQ(whole.items().size(), k);
}

// A newcomer takes over the heaviest's seat: what the seat held stays for it to reuse.
TEST(BottomK, ANewcomerTakesOverTheHeaviestsSeatAndItsStorage) {
  BottomK<Item> sample;
  sample.seatFor(50, 2).payload.assign(100, 1);
  sample.seatFor(40, 2);
  ASSERT_FALSE(sample.keeps(60, 2));
  ASSERT_TRUE(sample.keeps(10, 2));
  Item& seat = sample.seatFor(10, 2);
  EXPECT_GE(seat.payload.capacity(), 100u) << "the heaviest (50) was the seat with the payload";
  EXPECT_EQ(sample.items().size(), 2u);
}

}  // namespace
}  // namespace commtrace::report
