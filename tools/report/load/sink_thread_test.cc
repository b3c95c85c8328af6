// SinkThread hands the inner sink every op in the order it came, across batches, with
// each collective's own members; settle() returns with all of them taken; finish() comes
// after the last op; what the inner sink throws reaches the caller instead of ending the
// program, and the sink is fed nothing after it.
#include "tools/report/load/sink_thread.h"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

namespace commtrace::report {
namespace {

// Writes down what it is fed, one line per op: "c<seq>:<members' processes>" or "t<op_index>".
class RecordingSink : public JoinedOpSink {
 public:
  void collective(const CollInstance& c, std::span<const MemberView> members) override {
    std::string line = "c" + std::to_string(c.seq) + ":";
    for (const MemberView& m : members) line += std::to_string(m.process) + ",";
    seen.push_back(line);
    if (c.seq == throw_at) throw std::runtime_error("inner sink failed");
    ++taken;
  }
  void transfer(const P2pTransfer& t) override {
    seen.push_back("t" + std::to_string(t.op_index) + ":" + std::to_string(t.send.process) + ">" + std::to_string(t.recv.process));
    ++taken;
  }
  void finish() override { finished_after = seen.size(); }

  std::vector<std::string> seen;
  std::atomic<size_t> taken = 0;
  size_t finished_after = 0;
  uint64_t throw_at = UINT64_MAX;
};

// A collective of `size` members (processes seq, seq+1, ...) or a transfer, by turns.
void feed(JoinedOpSink& sink, uint64_t ops, uint32_t size) {
  std::vector<MemberView> members(size);
  for (uint64_t i = 0; i < ops; ++i) {
    if (i % 3 == 2) {
      P2pTransfer t;
      t.op_index = i;
      t.send.process = static_cast<int32_t>(i % 7);
      t.recv.process = static_cast<int32_t>(i % 5);
      sink.transfer(t);
      continue;
    }
    CollInstance c;
    c.seq = i;
    c.n_members = size;
    for (uint32_t r = 0; r < size; ++r) members[r].process = static_cast<int32_t>(i + r);
    sink.collective(c, members);
  }
}

TEST(SinkThread, FeedsEveryOpInOrderAcrossBatches) {
  RecordingSink direct, threaded;
  // About eight batches' members, in instances that straddle the batches' ends.
  const uint64_t ops = 1000;
  ASSERT_GT(ops * 2 / 3 * 100, 4 * SinkThread::kBatchMembers);
  feed(direct, ops, 100);
  {
    SinkThread thread(threaded);
    feed(thread, ops, 100);
    thread.finish();
  }
  ASSERT_EQ(direct.seen.size(), ops);
  EXPECT_EQ(threaded.seen, direct.seen);
  EXPECT_EQ(threaded.finished_after, direct.seen.size());
}

TEST(SinkThread, SettleReturnsWithEverythingHandedSoFarTaken) {
  RecordingSink inner;
  SinkThread thread(inner);
  feed(thread, 10, 4);  // less than a batch: settle() hands it over itself
  thread.settle();
  EXPECT_EQ(inner.taken.load(), 10u);
  feed(thread, 5000, 8);
  thread.settle();
  EXPECT_EQ(inner.taken.load(), 5010u);
  EXPECT_EQ(inner.finished_after, 0u);  // settling is not finishing
}

TEST(SinkThread, WhatTheInnerSinkThrowsReachesTheCaller) {
  RecordingSink inner;
  inner.throw_at = 4;
  SinkThread thread(inner);
  feed(thread, 50, 4);
  EXPECT_THROW(thread.settle(), std::runtime_error);
  // It is not fed further: the ops after the failure are dropped, not half-taken.
  EXPECT_EQ(inner.seen.size(), 5u);
  feed(thread, 10, 4);
  thread.finish();
  EXPECT_EQ(inner.seen.size(), 5u);
}

TEST(SinkThread, AnUnfedSinkStartsNoThreadAndFinishes) {
  RecordingSink inner;
  SinkThread thread(inner);
  thread.settle();
  thread.finish();
  EXPECT_TRUE(inner.seen.empty());
  EXPECT_EQ(inner.finished_after, 0u);
}

}  // namespace
}  // namespace commtrace::report
