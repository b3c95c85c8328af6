// StringTable: interning, lookup, truncation, overflow and concurrent use.
#include "core/string_table.h"

#include <gtest/gtest.h>

#include <latch>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace commtrace {
namespace {

// A private table per test, so ids and fill do not depend on other tests.
std::unique_ptr<StringTable> freshTable() { return std::make_unique<StringTable>(); }

TEST(StringTableTest, SameStringGetsSameId) {
  auto table = freshTable();
  const StringId id = table->intern("AllReduce");
  EXPECT_NE(id, 0u);
  EXPECT_EQ(table->intern("AllReduce"), id);
  const std::string copy = "AllReduce";  // same text at another address
  EXPECT_EQ(table->intern(copy.c_str()), id);
  EXPECT_EQ(table->intern(std::string_view(copy)), id);
  EXPECT_NE(table->intern("AllGather"), id);
}

TEST(StringTableTest, NullAndEmptyAreIdZero) {
  auto table = freshTable();
  EXPECT_EQ(table->intern(static_cast<const char*>(nullptr)), 0u);
  EXPECT_EQ(table->intern(""), 0u);
  EXPECT_EQ(table->intern(std::string_view()), 0u);
  EXPECT_EQ(table->lookup(0), "");
}

TEST(StringTableTest, LookupReturnsTheInternedText) {
  auto table = freshTable();
  const std::vector<std::string> texts = {"ncclFloat32", "RING", "LL128", "a", "with space", "ünïcode",
                                          std::string(255, 'x')};
  std::vector<StringId> ids;
  for (const std::string& s : texts) ids.push_back(table->intern(s.c_str()));
  for (size_t i = 0; i < texts.size(); ++i) EXPECT_EQ(table->lookup(ids[i]), texts[i]);
  // Prefixes are distinct strings.
  EXPECT_NE(table->intern("RIN"), table->intern("RING"));
  EXPECT_EQ(table->lookup(table->intern("RIN")), "RIN");
}

TEST(StringTableTest, StringsLongerThan255AreTruncated) {
  auto table = freshTable();
  const std::string head(StringTable::kMaxLength, 'k');
  const std::string longer = head + "tail that is cut";
  const StringId from_c_string = table->intern(longer.c_str());
  const StringId from_view = table->intern(std::string_view(longer));
  EXPECT_EQ(table->lookup(from_c_string), head);
  EXPECT_EQ(from_view, from_c_string);
  EXPECT_EQ(table->intern(head.c_str()), from_c_string) << "same first 255 characters, same string";
  EXPECT_EQ(table->intern((head + "other").c_str()), from_c_string);
}

TEST(StringTableTest, FullTableAnswersOverflowId) {
  auto table = freshTable();
  for (uint32_t i = 0; i < StringTable::kSlots; ++i) {
    const std::string s = "s" + std::to_string(i);
    ASSERT_EQ(table->lookup(table->intern(s.c_str())), s);
  }
  EXPECT_EQ(table->overflowCount(), 0u);
  EXPECT_EQ(table->intern("one too many"), StringTable::kOverflowId);
  EXPECT_EQ(table->overflowCount(), 1u);
  EXPECT_EQ(table->lookup(StringTable::kOverflowId), "<string table full>");
  EXPECT_EQ(table->lookup(table->intern("s7")), "s7") << "known strings still resolve";
}

// Threads intern a shared set of strings and a set of their own, interleaved, and look
// each id up at once while the others keep writing. Racing threads may get different ids
// for one string (the table allows it), but an id always names exactly its string.
TEST(StringTableTest, ConcurrentInterningGivesIdsThatLookUpToTheirString) {
  constexpr int kThreads = 8;
  constexpr int kPerKind = 1000;  // shared strings, and own strings per thread
  constexpr int kRounds = 3;
  auto table = freshTable();

  struct Interned {
    std::string text;
    StringId id;
  };
  std::vector<std::vector<Interned>> results(kThreads);
  std::latch start(kThreads);  // all threads intern at once, not one after the other
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      for (int round = 0; round < kRounds; ++round) {
        for (int i = 0; i < 2 * kPerKind; ++i) {
          // Threads walk the shared strings from different starting points.
          const std::string text = i % 2 == 0 ? "shared-" + std::to_string((i / 2 + t * 37) % kPerKind)
                                              : "thread-" + std::to_string(t) + "-" + std::to_string(i / 2);
          const StringId id = table->intern(text.c_str());
          results[t].push_back({text, id});
          EXPECT_EQ(table->lookup(id), text);
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();

  std::map<StringId, std::string> text_of_id;
  for (const auto& per_thread : results) {
    for (const Interned& r : per_thread) {
      ASSERT_NE(r.id, 0u);
      ASSERT_NE(r.id, StringTable::kOverflowId);
      EXPECT_EQ(table->lookup(r.id), r.text);
      const auto [it, inserted] = text_of_id.emplace(r.id, r.text);
      EXPECT_EQ(it->second, r.text) << "id " << r.id << " given to two different strings";
    }
  }
  EXPECT_GE(text_of_id.size(), static_cast<size_t>(kPerKind * (1 + kThreads)));
}

}  // namespace
}  // namespace commtrace
