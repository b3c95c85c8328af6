#include "tools/report/load/storage_pool.h"

#include <gtest/gtest.h>

#include <random>

namespace commtrace::report {
namespace {

TEST(StoragePool, StorageGivenBackIsTakenAgainWithoutAllocating) {
  StoragePool<int> pool;
  std::vector<int> a, b;
  pool.take(a, 5000);
  a.assign(5000, 1);
  const int* wide = a.data();
  pool.give(a);
  EXPECT_EQ(a.capacity(), 0u);
  pool.take(b, 4000);
  EXPECT_EQ(b.data(), wide) << "a wide request takes the storage of the same width";
  EXPECT_TRUE(b.empty());

  pool.take(a, 6);
  a.assign(6, 2);
  const int* small = a.data();
  EXPECT_EQ(a.capacity(), 8u) << "small storage comes in powers of two";
  pool.give(a);
  pool.take(a, 7);
  EXPECT_EQ(a.data(), small);
}

TEST(StoragePool, ARequestTakesTheNarrowestThatFitsAndNeverKeepsFarWiderStorage) {
  StoragePool<int> pool;
  std::vector<int> w1, w2, w3;
  pool.take(w1, 100);
  pool.take(w2, 2048);
  pool.take(w3, 16384);
  const int* mid = w2.data();
  const int* widest = w3.data();
  pool.give(w1), pool.give(w2), pool.give(w3);
  std::vector<int> x;
  pool.take(x, 1000);
  EXPECT_EQ(x.data(), mid);
  // A list that holds the widest storage, taken again for a few elements, gives it back.
  std::vector<int> y;
  pool.take(y, 10000);
  EXPECT_EQ(y.data(), widest);
  pool.take(y, 3);
  EXPECT_LE(y.capacity(), StoragePool<int>::kSmallMost);
  std::vector<int> z;
  pool.take(z, 16000);
  EXPECT_EQ(z.data(), widest);
}

TEST(StoragePool, WhatIsKeptIsBounded) {
  StoragePool<int> pool;
  std::mt19937 rng(7);
  std::vector<std::vector<int>> lists(5000);
  for (int round = 0; round < 3; ++round) {
    for (std::vector<int>& l : lists) {
      const size_t n = rng() % 3 == 0 ? 17 + rng() % 50000 : 1 + rng() % 16;
      pool.take(l, n);
      l.assign(n, round);
      ASSERT_GE(l.capacity(), n);
    }
    for (std::vector<int>& l : lists) pool.give(l);
    EXPECT_LE(pool.keptSmall(), 5 * StoragePool<int>::kSmallKept);
    EXPECT_LE(pool.keptWideBytes(), StoragePool<int>::kWideKeptBytes);
    EXPECT_GT(pool.keptWide(), 20u) << "wide storage by the hundred, as a wide job's instances wait";
  }
  pool.clear();
  EXPECT_EQ(pool.keptSmall() + pool.keptWide(), 0u);
}

}  // namespace
}  // namespace commtrace::report
