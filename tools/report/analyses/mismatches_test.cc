// Mismatches: instances a rank with a file never recorded ("missing" when it recorded later
// ones, "file ends" once per rank when its trace stops), ops started but never finished,
// unmatched sends and receives, ranks without files left to the run summary, and the cap.
#include "tools/report/finding_words.h"
#include "tools/report/analyses/mismatches.h"

#include <gtest/gtest.h>

#include "tests/support/run_model_builder.h"

using namespace commtrace::report;
using commtrace::testutil::kNotRecorded;
using commtrace::testutil::RunModelBuilder;
using commtrace::testutil::Span;

namespace {

const Span kDone{100, 200};

std::vector<MismatchRow> ofKind(const std::vector<MismatchRow>& rows, const std::string& kind) {
  std::vector<MismatchRow> out;
  for (const MismatchRow& r : rows)
    if (r.kind == kind) out.push_back(r);
  return out;
}

TEST(Mismatches, ACompleteRunHasNone) {
  RunModelBuilder b({"h", "h"});
  const uint32_t w = b.comm({0, 1}, "w");
  b.coll(w, "AllReduce", 8, {kDone, kDone});
  b.p2p(w, "Send", 0, 1, 8, kDone, kDone);
  uint64_t total = 99;
  EXPECT_TRUE(findMismatches(b.run, total).empty());
  EXPECT_EQ(total, 0u);
}

TEST(Mismatches, AHoleIsMissingAndATruncatedFileEndsOnce) {
  RunModelBuilder b({"h", "h", "h", "h"});
  const uint32_t w = b.comm({3, 1, 2, 0}, "w");  // comm rank 0 is global rank 3
  b.coll(w, "AllReduce", 8, {kDone, kDone, kDone, kDone});
  b.coll(w, "AllReduce", 8, {kNotRecorded, kDone, kDone, kDone});  // seq 1: rank 3 skipped it
  b.coll(w, "AllGather", 8, {kDone, kDone, kNotRecorded, kDone});  // seq 2: rank 2's file ends
  b.coll(w, "AllReduce", 8, {kDone, kDone, kNotRecorded, kDone});
  uint64_t total = 0;
  const std::vector<MismatchRow> rows = findMismatches(b.run, total);
  EXPECT_EQ(total, 2u);
  const std::vector<MismatchRow> missing = ofKind(rows, "missing");
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_EQ(missing[0].seq, 1u);
  EXPECT_EQ(missing[0].func, "AllReduce");
  EXPECT_EQ(missing[0].missing_ranks, std::vector<int>{3});
  EXPECT_FALSE(missing[0].comm_ranks);
  EXPECT_EQ(missing[0].comm, b.run.comms[w].id);
  EXPECT_EQ(missing[0].comm_name, "w");
  const std::vector<MismatchRow> ends = ofKind(rows, "file ends");
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0].seq, 2u) << "the first instance it lacks";
  EXPECT_EQ(ends[0].func, "AllGather");
  EXPECT_EQ(ends[0].missing_ranks, std::vector<int>{2});
}

// A rank whose process dropped records lost the ops it lacks: the mismatch says so, as it
// would otherwise read as the rank's doing.
TEST(Mismatches, WhatARankThatDroppedRecordsLacksSaysItWasLost) {
  RunModelBuilder b({"h", "h", "h", "h"});
  const uint32_t w = b.comm({3, 1, 2, 0}, "w");
  b.coll(w, "AllReduce", 8, {kNotRecorded, kDone, kDone, kDone});  // rank 3 lacks it
  b.coll(w, "AllGather", 8, {kDone, kDone, kNotRecorded, kDone});  // rank 2's file ends
  b.coll(w, "AllReduce", 8, {kDone, kDone, kNotRecorded, kDone});
  for (ProcessInfo& p : b.run.processes)
    if (p.rank == 3 || p.rank == 2) p.dropped_records = p.rank == 3 ? 40 : 7;
  uint64_t total = 0;
  const std::vector<MismatchRow> rows = findMismatches(b.run, total);
  const std::vector<MismatchRow> missing = ofKind(rows, "missing"), ends = ofKind(rows, "file ends");
  ASSERT_EQ(missing.size(), 1u);
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_NE(mismatchDetail(missing[0]).find("its process dropped 40 records before the file"), std::string::npos) << mismatchDetail(missing[0]);
  EXPECT_NE(mismatchDetail(ends[0]).find("its process dropped 7 records before the file"), std::string::npos) << mismatchDetail(ends[0]);
}

TEST(Mismatches, StartedButNeverFinishedIsUnfinished) {
  RunModelBuilder b({"h", "h", "h"});
  const uint32_t w = b.comm({0, 1, 2}, "w");
  b.coll(w, "AllReduce", 8, {kDone, {100, 0}, {0, 0}});  // rank 1 started on the GPU; rank 2 only enqueued
  b.coll(w, "AllReduce", 8, {{0, 0}, {0, 0}, {0, 0}});    // no GPU times anywhere: not a hang
  uint64_t total = 0;
  const std::vector<MismatchRow> rows = findMismatches(b.run, total);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(total, 1u);
  EXPECT_EQ(rows[0].kind, "unfinished");
  EXPECT_EQ(rows[0].seq, 0u);
  EXPECT_EQ(rows[0].missing_ranks, (std::vector<int>{1, 2}));
}

TEST(Mismatches, UnmatchedPointToPointSides) {
  RunModelBuilder b({"h", "h"});
  const uint32_t w = b.comm({0, 1}, "w");
  b.p2p(w, "Send", 0, 1, 8, kDone, kNotRecorded, 0);  // receive #0 lost, #1 recorded: missing
  b.p2p(w, "Send", 0, 1, 8, kDone, kDone, 1);
  b.p2p(w, "Send", 1, 0, 8, kDone, kDone, 0);
  b.p2p(w, "Send", 1, 0, 8, kNotRecorded, kDone, 1);  // rank 1's sends stop: file ends
  b.p2p(w, "Send", 1, 0, 8, kNotRecorded, kDone, 2);
  uint64_t total = 0;
  const std::vector<MismatchRow> rows = findMismatches(b.run, total);
  EXPECT_EQ(total, 2u);
  const std::vector<MismatchRow> missing = ofKind(rows, "missing");
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_EQ(missing[0].missing_ranks, std::vector<int>{1});
  EXPECT_EQ(missing[0].seq, 0u);
  EXPECT_NE(mismatchDetail(missing[0]).find("receive #0"), std::string::npos) << mismatchDetail(missing[0]);
  const std::vector<MismatchRow> ends = ofKind(rows, "file ends");
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0].missing_ranks, std::vector<int>{1});
  EXPECT_EQ(ends[0].seq, 1u);
}

TEST(Mismatches, UnknownGlobalRanksAreGivenAsCommRanks) {
  RunModelBuilder b({"h", "h"});
  const uint32_t w = b.comm({0, 1}, "w");
  b.run.comms[w].global_ranks = {-1, -1};
  b.run.processes[1].rank = -1;
  b.coll(w, "AllReduce", 8, {kDone, kNotRecorded});
  b.coll(w, "AllReduce", 8, {kDone, kDone});
  uint64_t total = 0;
  const std::vector<MismatchRow> rows = findMismatches(b.run, total);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_TRUE(rows[0].comm_ranks);
  EXPECT_EQ(rows[0].missing_ranks, std::vector<int>{1});
}

// A member no readable file speaks for (its file missing, or damaged before the record
// that names its seat) is one "file ends" row per communicator, not one per instance.
TEST(Mismatches, AMemberNoFileRecordedIsOneRowPerCommunicator) {
  RunModelBuilder b({"h", "h"});
  const uint32_t w = b.comm({0, 1}, "w");
  b.run.comms[w].processes[1] = -1;
  for (int i = 0; i < 5; ++i) b.coll(w, "AllReduce", 8, {kDone, kNotRecorded});
  uint64_t total = 0;
  const std::vector<MismatchRow> rows = findMismatches(b.run, total);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(total, 1u);
  EXPECT_EQ(rows[0].kind, "file ends");
  EXPECT_EQ(rows[0].seq, 0u);
  EXPECT_EQ(rows[0].missing_ranks, std::vector<int>{1});
  EXPECT_NE(mismatchDetail(rows[0]).find("no readable trace file"), std::string::npos) << mismatchDetail(rows[0]);
}

TEST(Mismatches, TheListIsCappedAndTheTotalIsNot) {
  RunModelBuilder b({"h", "h"});
  const uint32_t w = b.comm({0, 1}, "w");
  const size_t holes = kMaxMismatchRows + 500;
  for (size_t i = 0; i < holes; ++i) b.coll(w, "AllReduce", 8, {kDone, kNotRecorded});
  b.coll(w, "AllReduce", 8, {kDone, kDone});
  uint64_t total = 0;
  const std::vector<MismatchRow> rows = findMismatches(b.run, total);
  EXPECT_EQ(rows.size(), kMaxMismatchRows);
  EXPECT_EQ(total, holes);
}

}  // namespace
