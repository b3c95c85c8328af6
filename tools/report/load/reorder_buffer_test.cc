// The reorder buffer gives back what it holds in order, however it came, equal items in
// arrival order, and keeps what it is given.
#include "tools/report/load/reorder_buffer.h"

#include <gtest/gtest.h>

#include <random>
#include <utility>
#include <vector>

namespace commtrace::report {
namespace {

using Item = std::pair<int, int>;  // (key, arrival)
bool laterKey(const Item& a, const Item& b) { return a.first > b.first; }

TEST(ReorderBuffer, GivesItemsBackInOrderEqualOnesInArrivalOrder) {
  ReorderBuffer<Item, decltype(&laterKey)> buffer(laterKey);
  std::mt19937 random(7);
  std::vector<Item> given;
  for (int i = 0; i < 2000; ++i) {
    // Mostly in order, some far back, many equal keys.
    const int key = i % 17 == 0 ? static_cast<int>(random() % 2000) : i / 3;
    given.push_back({key, i});
    buffer.push(given.back());
  }
  ASSERT_EQ(buffer.size(), given.size());
  std::vector<Item> out;
  while (!buffer.empty()) out.push_back(buffer.popEarliest());
  std::vector<Item> expected = given;
  std::stable_sort(expected.begin(), expected.end(), [](const Item& a, const Item& b) { return a.first < b.first; });
  EXPECT_EQ(out, expected);
}

TEST(ReorderBuffer, ItemsTakenWhileFillingComeOutInOrderOfWhatWasHeld) {
  ReorderBuffer<Item, decltype(&laterKey)> buffer(laterKey);
  std::vector<int> out;
  for (int key : {5, 3, 9, 1, 7, 8, 2}) {
    buffer.push({key, 0});
    if (buffer.size() > 3) out.push_back(buffer.popEarliest().first);
  }
  while (!buffer.empty()) out.push_back(buffer.popEarliest().first);
  EXPECT_EQ(out, (std::vector<int>{1, 3, 5, 2, 7, 8, 9}));  // 2 came after 5 had left: placed where it came
}

}  // namespace
}  // namespace commtrace::report
