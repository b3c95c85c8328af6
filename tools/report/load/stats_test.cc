// Order statistics: the k-th of a sorted run less a few of its values is what nth_element of
// the rest finds, ties and all.
#include "tools/report/load/stats.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace commtrace::report {
namespace {

TEST(Stats, TheKthOfTheRestIsWhatTheRestSortedHolds) {
  std::mt19937 random(7);
  for (int trial = 0; trial < 2000; ++trial) {
    const size_t n = 1 + random() % 40;
    std::vector<double> all;
    for (size_t i = 0; i < n; ++i) all.push_back(static_cast<double>(random() % 12));  // many ties
    std::vector<double> rest = all, removed;
    std::shuffle(rest.begin(), rest.end(), random);
    const size_t m = random() % (n + 1);
    removed.assign(rest.end() - static_cast<std::ptrdiff_t>(m), rest.end());
    rest.resize(n - m);
    std::sort(all.begin(), all.end());
    std::sort(removed.begin(), removed.end());
    std::vector<double> sorted_rest = rest;
    std::sort(sorted_rest.begin(), sorted_rest.end());
    for (size_t k = 0; k < sorted_rest.size(); ++k) ASSERT_EQ(kthExcluding(all, removed, k), sorted_rest[k]) << trial << " k " << k;
    EXPECT_EQ(medianExcluding(all, removed), median(rest)) << trial;
  }
}

TEST(Stats, NothingLeftHasAMedianOfZero) {
  const std::vector<double> all = {1, 2, 3};
  EXPECT_EQ(medianExcluding(all, all), 0);
  EXPECT_EQ(medianExcluding({}, {}), 0);
  EXPECT_EQ(medianExcluding({5}, {}), 5);
  EXPECT_EQ(kthExcluding(all, {2}, 2), 0) << "past the rest";
}

}  // namespace
}  // namespace commtrace::report
