// The preload face's communicator table (interpose/comm_registry.h): lookups, NCCL's reuse
// of a destroyed communicator's address, recycled slots, a full table, the per-peer
// counters, comm ids, and lookups racing creation and destruction on other threads.
#include "interpose/comm_registry.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <set>
#include <thread>
#include <vector>

namespace {

using commtrace::interpose::bump;
using commtrace::interpose::CommEntry;
using commtrace::interpose::CommRegistry;
namespace ci = commtrace::interpose;

// Communicator handles are only compared, never dereferenced.
const void* handle(uint64_t i) { return reinterpret_cast<const void*>(0x7f0000100000ull + i * 0x240); }

std::unique_ptr<CommRegistry> registry() { return std::make_unique<CommRegistry>(); }

TEST(CommRegistryTest, FindsWhatWasAddedAndNothingElse) {
  auto r = registry();
  EXPECT_EQ(r->find(nullptr), nullptr);
  EXPECT_EQ(r->find(handle(1)), nullptr);
  CommEntry* e = r->add(handle(1), 0xABC);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(r->find(handle(1)), e);
  EXPECT_EQ(e->handle(), handle(1));
  EXPECT_EQ(e->commId(), 0xABCu);
  EXPECT_EQ(e->recordId(), 0xABCu);
  EXPECT_EQ(e->n_ranks.load(), 0);
  EXPECT_EQ(e->rank.load(), -1);
  EXPECT_FALSE(e->resolved.load());
  EXPECT_EQ(r->find(handle(2)), nullptr);
}

TEST(CommRegistryTest, ThousandsOfCommunicatorsKeepTheirIds) {
  auto r = registry();
  constexpr uint64_t kComms = 3000;
  for (uint64_t i = 0; i < kComms; ++i) ASSERT_NE(r->add(handle(i), 1000 + i), nullptr) << i;
  for (uint64_t i = 0; i < kComms; ++i) {
    CommEntry* e = r->find(handle(i));
    ASSERT_NE(e, nullptr) << i;
    EXPECT_EQ(e->commId(), 1000 + i);
  }
}

TEST(CommRegistryTest, ADestroyedCommunicatorIsGoneAndItsAddressCanComeBack) {
  auto r = registry();
  CommEntry* first = r->add(handle(7), 1);
  ASSERT_NE(first, nullptr);
  bump(first->calls[0]);
  first->plugin_comm_id.store(0x99);
  ASSERT_TRUE(first->setRanks(4, 2));
  bump(first->p2pCounter(false, 3));
  first->markDead(first->stamp());
  EXPECT_EQ(r->find(handle(7)), nullptr);

  // NCCL hands the same memory to the next communicator: a fresh entry, nothing inherited.
  CommEntry* second = r->add(handle(7), 2);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(r->find(handle(7)), second);
  EXPECT_EQ(second->commId(), 2u);
  EXPECT_EQ(second->recordId(), 2u) << "the plugin id of the old communicator is not inherited";
  EXPECT_EQ(second->calls[0].load(), 0u);
  EXPECT_EQ(second->n_ranks.load(), 0);
  EXPECT_EQ(second->p2pCounter(false, 3).load(), 0u) << "no per-peer counters before setRanks";
}

TEST(CommRegistryTest, AnAddressReusedBeforeItsDestroyWasSeenIsTakenOver) {
  auto r = registry();
  ASSERT_NE(r->add(handle(3), 1), nullptr);
  CommEntry* again = r->add(handle(3), 2);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(r->find(handle(3))->commId(), 2u);
}

TEST(CommRegistryTest, AStaleDestroyDoesNotKillTheNextCommunicatorAtTheSameAddress) {
  auto r = registry();
  CommEntry* e = r->add(handle(5), 1);
  const uint64_t stamp = e->stamp();  // taken before ncclCommDestroy ...
  // ... which frees the memory; another thread's init gets it before our wrapper returns.
  ASSERT_NE(r->add(handle(5), 2), nullptr);
  e->markDead(stamp);
  ASSERT_NE(r->find(handle(5)), nullptr);
  EXPECT_EQ(r->find(handle(5))->commId(), 2u);
}

TEST(CommRegistryTest, DeadSlotsAreRecycledSoChurnNeverFillsTheTable) {
  auto r = registry();
  for (uint64_t i = 0; i < 3 * CommRegistry::kCapacity; ++i) {
    CommEntry* e = r->add(handle(i), i + 1);
    ASSERT_NE(e, nullptr) << "communicator " << i;
    ASSERT_EQ(r->find(handle(i)), e);
    e->markDead(e->stamp());
  }
  CommEntry* last = r->add(handle(99999), 5);
  ASSERT_NE(last, nullptr);
  EXPECT_EQ(r->find(handle(99999)), last);
}

TEST(CommRegistryTest, AFullTableRefusesAndKeepsWhatItHas) {
  auto r = registry();
  for (uint64_t i = 0; i < CommRegistry::kCapacity; ++i) ASSERT_NE(r->add(handle(i), i + 1), nullptr) << i;
  EXPECT_EQ(r->add(handle(CommRegistry::kCapacity), 1), nullptr);
  EXPECT_EQ(r->addIfAbsent(handle(CommRegistry::kCapacity), 1), nullptr);
  EXPECT_EQ(r->find(handle(0))->commId(), 1u);
  EXPECT_EQ(r->find(handle(CommRegistry::kCapacity - 1))->commId(), CommRegistry::kCapacity);
  // Once one dies its slot serves the newcomer.
  CommEntry* victim = r->find(handle(17));
  victim->markDead(victim->stamp());
  ASSERT_NE(r->add(handle(CommRegistry::kCapacity), 77), nullptr);
  EXPECT_EQ(r->find(handle(CommRegistry::kCapacity))->commId(), 77u);
}

TEST(CommRegistryTest, AddIfAbsentKeepsAnExistingEntry) {
  auto r = registry();
  CommEntry* e = r->add(handle(1), 11);
  EXPECT_EQ(r->addIfAbsent(handle(1), 22), e);
  EXPECT_EQ(e->commId(), 11u);
  CommEntry* other = r->addIfAbsent(handle(2), 22);
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->commId(), 22u);
}

TEST(CommRegistryTest, PerPeerCountersPerDirection) {
  auto r = registry();
  CommEntry* e = r->add(handle(1), 1);
  ASSERT_TRUE(e->setRanks(3, 1));
  EXPECT_EQ(e->n_ranks.load(), 3);
  EXPECT_EQ(e->rank.load(), 1);
  EXPECT_EQ(bump(e->p2pCounter(false, 2)), 0u);
  EXPECT_EQ(bump(e->p2pCounter(false, 2)), 1u);
  EXPECT_EQ(bump(e->p2pCounter(true, 2)), 0u) << "receives from 2 count apart from sends to 2";
  EXPECT_EQ(bump(e->p2pCounter(false, 0)), 0u);
  EXPECT_EQ(&e->p2pCounter(false, 3), &e->p2pCounter(true, -1)) << "out-of-range peers share one counter";
  EXPECT_NE(&e->p2pCounter(false, 3), &e->p2pCounter(false, 2));
  EXPECT_FALSE(e->setRanks(0, 0));
  ASSERT_TRUE(e->setRanks(3, 1));  // a second answer keeps the counters
  EXPECT_EQ(e->p2pCounter(false, 2).load(), 2u);
}

TEST(CommIdsTest, SameInputsSameIdOtherwiseDifferent) {
  unsigned char id[128];
  std::memset(id, 0x5a, sizeof id);
  const uint64_t a = ci::commIdOfUniqueId(id, sizeof id);
  EXPECT_EQ(a, ci::commIdOfUniqueId(id, sizeof id));
  EXPECT_NE(a, 0u);
  std::set<uint64_t> ids{a};
  for (size_t byte : {0, 1, 64, 127}) {
    id[byte] ^= 1;
    EXPECT_TRUE(ids.insert(ci::commIdOfUniqueId(id, sizeof id)).second) << "byte " << byte;
    id[byte] ^= 1;
  }
  EXPECT_EQ(ci::commIdOfSplit(a, 0, 3), ci::commIdOfSplit(a, 0, 3));
  for (uint64_t nth : {0, 1, 2}) {
    for (int color : {-1, 0, 1, 3}) EXPECT_TRUE(ids.insert(ci::commIdOfSplit(a, nth, color)).second);
    EXPECT_TRUE(ids.insert(ci::commIdOfShrink(a, nth)).second);
  }
  EXPECT_TRUE(ids.insert(ci::commIdOfSplit(a + 1, 0, 3)).second) << "another parent";
  const uint64_t r1 = ci::randomCommId(), r2 = ci::randomCommId();
  EXPECT_NE(r1, 0u);
  EXPECT_NE(r1, r2);
}

// Lookups of stable communicators never miss while other threads create and destroy
// theirs, recycling slots on the same probe paths.
TEST(CommRegistryConcurrencyTest, LookupsRaceCreationAndDestruction) {
  auto r = registry();
  constexpr uint64_t kStable = 200;
  for (uint64_t i = 0; i < kStable; ++i) ASSERT_NE(r->add(handle(i), 5000 + i), nullptr);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> misses{0};
  std::vector<std::thread> churn;
  for (uint64_t t = 0; t < 3; ++t) {
    churn.emplace_back([&, t] {
      for (uint64_t k = 0; k < 20000; ++k) {
        const uint64_t i = 100000 + t * 1000 + k % 500;
        CommEntry* e = r->add(handle(i), i);
        if (e == nullptr || r->find(handle(i)) != e || e->commId() != i) misses.fetch_add(1);
        if (e != nullptr) e->markDead(e->stamp());
      }
    });
  }
  std::thread reader([&] {
    while (!stop.load()) {
      for (uint64_t i = 0; i < kStable; ++i) {
        const CommEntry* e = r->find(handle(i));
        if (e == nullptr || e->commId() != 5000 + i) misses.fetch_add(1);
      }
    }
  });
  for (auto& t : churn) t.join();
  stop = true;
  reader.join();
  EXPECT_EQ(misses.load(), 0u);
}

}  // namespace
