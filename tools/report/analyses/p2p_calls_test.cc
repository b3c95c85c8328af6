// How the pieces of AlltoAll, Gather and Scatter are tied back into calls: per rank in issue
// order, a part ends when it is complete or when the next piece cannot belong to it, and the
// k-th call on every member is one instance whose time is the shortest member's GPU span.
#include "tools/report/analyses/p2p_calls.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "tests/support/run_model_builder.h"
#include "tools/report/analyses/op_metrics.h"

using namespace commtrace::report;
using commtrace::testutil::kNotRecorded;
using commtrace::testutil::RunModelBuilder;

namespace {

void expectSpan(const MemberView& m, uint64_t start, uint64_t end) {
  EXPECT_EQ(m.gpu_start_ns, start) << "comm rank " << m.comm_rank;
  EXPECT_EQ(m.gpu_end_ns, end) << "comm rank " << m.comm_rank;
}

TEST(P2pCalls, AlltoAllPiecesIssuedTogetherAreOneCallWhereverTheyLieInTheRun) {
  RunModelBuilder b({"h", "h", "h"});
  const uint32_t comm = b.comm({0, 1, 2}, "tp");
  b.alltoall(comm, 4096, {{100, 1000}, {400, 1000}, {700, 1000}});
  b.alltoall(comm, 4096, {{2000, 2600}, {2100, 2600}, {2050, 2600}});
  std::reverse(b.run.transfers.begin(), b.run.transfers.end());  // the issue times decide, not the order here
  const std::vector<P2pCall> calls = p2pCalls(b.run);
  ASSERT_EQ(calls.size(), 2u);
  for (uint64_t k = 0; k < 2; ++k) {
    EXPECT_EQ(calls[k].index, k);
    EXPECT_EQ(calls[k].comm, comm);
    EXPECT_EQ(b.run.name(calls[k].func), "AlltoAll");
    EXPECT_EQ(calls[k].bytes, 4096u) << "per peer, not summed over the pieces";
    ASSERT_EQ(calls[k].members.size(), 3u);
    for (int r = 0; r < 3; ++r) {
      EXPECT_EQ(calls[k].members[r].process, r);
      EXPECT_EQ(calls[k].members[r].comm_rank, r);
    }
  }
  for (int r = 0; r < 3; ++r) EXPECT_LT(calls[0].members[r].cpu_end_ns, calls[1].members[r].cpu_start_ns);
  expectSpan(calls[0].members[1], 400, 1000);
  EXPECT_EQ(transferNs(calls[0]), 300u) << "rank 2 arrived last";
  EXPECT_EQ(transferNs(calls[1]), 500u);
}

// Call 0 gathers to rank 0, call 1 to rank 1: rank 2 sends to 0 and then to 1 (same
// direction, another peer), rank 1 sends and then receives.
TEST(P2pCalls, GatherPartsEndWhenCompleteSoTheRootMayChange) {
  RunModelBuilder b({"h", "h", "h"});
  const uint32_t comm = b.comm({0, 1, 2}, "w");
  b.p2p(comm, "Gather", 1, 0, 64, {10, 90}, {20, 100});
  b.p2p(comm, "Gather", 2, 0, 64, {30, 100}, {5, 95});
  b.p2p(comm, "Gather", 0, 1, 64, {200, 300}, {210, 320});
  b.p2p(comm, "Gather", 2, 1, 64, {250, 300}, {215, 310});
  const std::vector<P2pCall> calls = p2pCalls(b.run);
  ASSERT_EQ(calls.size(), 2u);
  expectSpan(calls[0].members[0], 5, 100);  // the root: first receive start to last receive end
  expectSpan(calls[0].members[1], 10, 90);
  expectSpan(calls[0].members[2], 30, 100);
  expectSpan(calls[1].members[0], 200, 300);
  expectSpan(calls[1].members[1], 210, 320);
  expectSpan(calls[1].members[2], 250, 300);
  EXPECT_EQ(transferNs(calls[0]), 70u);
  EXPECT_EQ(transferNs(calls[1]), 50u);
}

// As above, but the root of call 0 lost its receive from rank 2 (a dropped record): its
// part never completes, and its send of call 1 still does not join it.
TEST(P2pCalls, AGatherPartMissingAPieceEndsWhereTheDirectionTurns) {
  RunModelBuilder b({"h", "h", "h"});
  const uint32_t comm = b.comm({0, 1, 2}, "w");
  b.p2p(comm, "Gather", 1, 0, 64, {10, 90}, {20, 100});
  b.p2p(comm, "Gather", 2, 0, 64, {30, 100}, kNotRecorded);
  b.p2p(comm, "Gather", 0, 1, 64, {200, 300}, {210, 320});
  b.p2p(comm, "Gather", 2, 1, 64, {250, 300}, {215, 310});
  const std::vector<P2pCall> calls = p2pCalls(b.run);
  ASSERT_EQ(calls.size(), 2u);
  expectSpan(calls[0].members[0], 20, 100);
  expectSpan(calls[1].members[0], 200, 300);
}

// Call 0 scatters from rank 0, call 1 from rank 2: rank 1 receives from 0 and then from 2.
TEST(P2pCalls, ScatterNonRootsReceiveOnePiecePerCall) {
  RunModelBuilder b({"h", "h", "h"});
  const uint32_t comm = b.comm({0, 1, 2}, "w");
  b.p2p(comm, "Scatter", 0, 1, 64, {10, 100}, {50, 100});
  b.p2p(comm, "Scatter", 0, 2, 64, {10, 100}, {60, 100});
  b.p2p(comm, "Scatter", 2, 0, 64, {200, 300}, {280, 300});
  b.p2p(comm, "Scatter", 2, 1, 64, {200, 300}, {260, 300});
  const std::vector<P2pCall> calls = p2pCalls(b.run);
  ASSERT_EQ(calls.size(), 2u);
  expectSpan(calls[0].members[1], 50, 100);
  expectSpan(calls[1].members[1], 260, 300);
  expectSpan(calls[1].members[2], 200, 300);
  EXPECT_EQ(transferNs(calls[1]), 20u);
}

TEST(P2pCalls, ARankWithoutAFileHasNoPartAndTheOthersStayWhole) {
  RunModelBuilder b({"h", "h", "h"});
  const uint32_t comm = b.comm({0, 1, 2}, "tp");
  b.alltoall(comm, 4096, {{100, 1000}, {400, 1000}, kNotRecorded});
  b.alltoall(comm, 4096, {{2000, 2600}, {2100, 2600}, kNotRecorded});
  const std::vector<P2pCall> calls = p2pCalls(b.run);
  ASSERT_EQ(calls.size(), 2u);
  for (const P2pCall& call : calls) {
    EXPECT_EQ(call.members[2].process, -1);
    EXPECT_EQ(call.members[2].gpuDuration(), 0u);
  }
  expectSpan(calls[1].members[0], 2000, 2600);
  EXPECT_EQ(transferNs(calls[0]), 600u);
  EXPECT_EQ(transferNs(calls[1]), 500u);
}

TEST(P2pCalls, PlainSendsAndPiecesToSelfAreNoPartOfACall) {
  RunModelBuilder b({"h", "h"});
  const uint32_t comm = b.comm({0, 1}, "w");
  b.alltoall(comm, 4096, {{100, 1000}, {400, 1000}});
  b.p2p(comm, "Send", 0, 1, 8, {5000, 9000}, {5000, 9000});
  b.p2p(comm, "AlltoAll", 0, 0, 4096, {5000, 9000}, {5000, 9000});
  b.alltoall(comm, 4096, {{2000, 2600}, {2100, 2600}});
  const std::vector<P2pCall> calls = p2pCalls(b.run);
  ASSERT_EQ(calls.size(), 2u);
  expectSpan(calls[1].members[0], 2000, 2600);
}

// A long AlltoAll run fed as the loader would (transfers out of issue order within a few
// calls of each other): the same calls as fed in order, and each call handed on while the
// run is still being fed, so that what the joiner holds does not grow with the run.
TEST(P2pCalls, StreamedCallsAreHandedOnAsTheRunGoesAndEqualThoseInOrder) {
  RunModelBuilder b({"h", "h", "h", "h"});
  const uint32_t comm = b.comm({0, 1, 2, 3}, "ep");
  constexpr uint64_t kCalls = 5000, kPeriodNs = 1'000'000;  // 5 s of calls, past the joiner's horizon
  for (uint64_t k = 0; k < kCalls; ++k) {
    const uint64_t t = k * kPeriodNs + 1000;
    b.alltoall(comm, 1 << 20, {{t, t + 5000 + k % 7}, {t + 100, t + 5000}, {t + 200, t + 5000}, {t + 300, t + 5000}});
  }
  for (P2pTransfer& t : b.run.transfers) {  // issued just before their kernels, 1 ms apart
    t.send.cpu_start_ns = t.send.gpu_start_ns - 50;
    t.recv.cpu_start_ns = t.recv.gpu_start_ns - 50;
  }
  const std::vector<P2pCall> in_order = p2pCalls(b.run);
  ASSERT_EQ(in_order.size(), kCalls);

  std::vector<P2pTransfer> shuffled = b.run.transfers;
  std::mt19937_64 rng(7);
  for (size_t at = 0; at < shuffled.size(); at += 60) {  // 60 transfers: 5 calls' pieces
    std::shuffle(shuffled.begin() + static_cast<std::ptrdiff_t>(at), shuffled.begin() + static_cast<std::ptrdiff_t>(std::min(at + 60, shuffled.size())), rng);
  }
  std::vector<P2pCall> streamed;
  uint64_t handed_on_while_feeding = 0;
  P2pCallJoiner joiner([&](const P2pCall& c) { streamed.push_back(c); });
  for (const P2pTransfer& t : shuffled) joiner.transfer(t);
  handed_on_while_feeding = streamed.size();
  joiner.finish();
  EXPECT_GE(handed_on_while_feeding, kCalls / 2) << "calls more than the horizon (2 of the 5 s) behind the newest piece are handed on";
  ASSERT_EQ(streamed.size(), kCalls);
  std::sort(streamed.begin(), streamed.end(), [](const P2pCall& a, const P2pCall& c) { return a.index < c.index; });
  for (uint64_t k = 0; k < kCalls; ++k) {
    EXPECT_EQ(streamed[k].index, k);
    EXPECT_EQ(streamed[k].pieces.size(), 12u) << k;
    EXPECT_EQ(transferNs(streamed[k]), transferNs(in_order[k])) << k;
    for (int r = 0; r < 4; ++r) expectSpan(streamed[k].members[r], in_order[k].members[r].gpu_start_ns, in_order[k].members[r].gpu_end_ns);
  }
}

}  // namespace
