// The bandwidth table: nccl-tests' S and busBw factors, transfer time = the shortest member
// duration, grouping by (comm, func, size bucket, algo, proto), percentiles, AlltoAll counted
// per call rather than per piece, and rows that say why they have no bandwidth instead of
// printing 0.
#include "tools/report/analyses/bandwidth.h"

#include <gtest/gtest.h>

#include "tests/support/run_model_builder.h"
#include "tools/report/analyses/op_metrics.h"

using namespace commtrace::report;
using commtrace::testutil::kNotRecorded;
using commtrace::testutil::RunModelBuilder;
using commtrace::testutil::Span;

namespace {

constexpr uint64_t kMiB = 1 << 20;

BandwidthRow onlyRow(const std::vector<BandwidthRow>& rows) {
  EXPECT_EQ(rows.size(), 1u);
  return rows.front();
}

TEST(OpMetrics, FactorTableIsNcclTests) {
  EXPECT_DOUBLE_EQ(busBwFactor("AllReduce", 8), 2.0 * 7 / 8);
  for (const char* f : {"AllGather", "ReduceScatter", "AlltoAll", "Gather", "Scatter"}) {
    EXPECT_DOUBLE_EQ(busBwFactor(f, 8), 7.0 / 8) << f;
    EXPECT_EQ(ncclTestsBytes(f, 100, 8), 800u) << f;
  }
  for (const char* f : {"Broadcast", "Reduce", "Send", "Recv"}) {
    EXPECT_DOUBLE_EQ(busBwFactor(f, 8), 1.0) << f;
    EXPECT_EQ(ncclTestsBytes(f, 100, 8), 100u) << f;
  }
  EXPECT_EQ(ncclTestsBytes("AllReduce", 100, 8), 100u);
}

TEST(Bandwidth, AllReduceTimeIsTheShortestMemberAndBusBwUsesTheFactor) {
  RunModelBuilder b({"h", "h", "h", "h"});
  const uint32_t comm = b.comm({0, 1, 2, 3}, "tp.0");
  // Everyone stops at 1000 us; rank 2 arrived last, 100 us before the end.
  b.coll(comm, "AllReduce", kMiB, {{1, 1'000'000}, {500'000, 1'000'000}, {900'000, 1'000'000}, {700'000, 1'000'000}});
  const BandwidthRow row = onlyRow(bandwidthTable(b.run));
  EXPECT_EQ(row.func, "AllReduce");
  EXPECT_EQ(row.comm_name, "tp.0");
  EXPECT_EQ(row.comm, b.run.comms[comm].id);
  EXPECT_EQ(row.bytes, kMiB);
  EXPECT_EQ(row.bucket, "1-2 MiB");
  EXPECT_EQ(row.algo, "RING");
  EXPECT_EQ(row.proto, "SIMPLE");
  EXPECT_EQ(row.count, 1u);
  EXPECT_EQ(row.timed, 1u);
  EXPECT_DOUBLE_EQ(row.time_us_p50, 100.0);
  EXPECT_DOUBLE_EQ(row.algbw_gbs_p50, static_cast<double>(kMiB) / 100'000);
  EXPECT_DOUBLE_EQ(row.busbw_gbs_p50, row.algbw_gbs_p50 * 1.5);
  EXPECT_EQ(row.no_bandwidth, "");
}

TEST(Bandwidth, AllGatherSizeIsPerRankTimesN) {
  RunModelBuilder b({"h", "h", "h", "h"});
  const uint32_t comm = b.comm({0, 1, 2, 3}, "w");
  b.coll(comm, "AllGather", kMiB, {{1, 400'000}, {1, 400'000}, {1, 400'000}, {200'000, 400'000}});
  const BandwidthRow row = onlyRow(bandwidthTable(b.run));
  EXPECT_EQ(row.bytes, 4 * kMiB);
  EXPECT_EQ(row.bucket, "4-8 MiB");
  EXPECT_DOUBLE_EQ(row.algbw_gbs_p50, 4.0 * kMiB / 200'000);
  EXPECT_DOUBLE_EQ(row.busbw_gbs_p50, row.algbw_gbs_p50 * 0.75);
}

TEST(Bandwidth, MembersWithoutGpuTimesAreSkipped) {
  RunModelBuilder b({"h", "h", "h"});
  const uint32_t comm = b.comm({0, 1, 2}, "w");
  b.coll(comm, "AllReduce", 3000, {{0, 0}, kNotRecorded, {10'000, 40'000}});  // a GPU time of 0 is "not recorded"
  EXPECT_DOUBLE_EQ(onlyRow(bandwidthTable(b.run)).time_us_p50, 30.0);
}

TEST(Bandwidth, PercentilesOverInstancesOfOneGroup) {
  RunModelBuilder b({"h", "h"});
  const uint32_t comm = b.comm({0, 1}, "w");
  for (uint64_t k = 1; k <= 10; ++k)  // transfers of 10, 20, ... 100 us
    b.coll(comm, "AllReduce", 4096, {{1, 1'000'000}, {1'000'000 - k * 10'000, 1'000'000}});
  const BandwidthRow row = onlyRow(bandwidthTable(b.run));
  EXPECT_EQ(row.count, 10u);
  EXPECT_DOUBLE_EQ(row.time_us_p50, 50.0);
  EXPECT_DOUBLE_EQ(row.time_us_p90, 90.0);
  EXPECT_DOUBLE_EQ(row.algbw_gbs_p50, 4096.0 / 60'000);  // the median of 4096/10us ... 4096/100us
}

TEST(Bandwidth, GroupsSplitBySizeBucketAlgoAndProto) {
  RunModelBuilder b({"h", "h"});
  const uint32_t comm = b.comm({0, 1}, "w");
  const std::vector<Span> spans{{1, 10'001}, {1, 10'001}};
  b.coll(comm, "AllReduce", 1000, spans);
  b.coll(comm, "AllReduce", 1020, spans);  // same bucket (512 B-1 KiB)
  b.coll(comm, "AllReduce", 1024, spans);
  b.coll(comm, "AllReduce", 1000, spans, "TREE");
  b.coll(comm, "AllReduce", 1000, spans, "RING", "LL");
  const std::vector<BandwidthRow> rows = bandwidthTable(b.run);
  ASSERT_EQ(rows.size(), 4u);
  uint64_t counted = 0;
  for (const BandwidthRow& row : rows) counted += row.count;
  EXPECT_EQ(counted, 5u);
  const auto it = std::find_if(rows.begin(), rows.end(), [](const BandwidthRow& r) { return r.bucket == "512 B-1 KiB" && r.algo == "RING" && r.proto == "SIMPLE"; });
  ASSERT_NE(it, rows.end());
  EXPECT_EQ(it->count, 2u);
}

TEST(Bandwidth, UnknownSizeIsCountedWithoutBandwidthAndSaysWhy) {
  RunModelBuilder b({"h", "h"});
  const uint32_t comm = b.comm({0, 1}, "w");
  b.coll(comm, "AllReduce", 0, {{1, 10'000}, {5'000, 10'000}});
  b.coll(comm, "AllReduce", 0, {{1, 10'000}, {5'000, 10'000}});
  const BandwidthRow row = onlyRow(bandwidthTable(b.run));
  EXPECT_EQ(row.count, 2u);
  EXPECT_EQ(row.timed, 2u);
  EXPECT_EQ(row.bucket, "unknown size");
  EXPECT_DOUBLE_EQ(row.time_us_p50, 5.0);
  EXPECT_NE(row.no_bandwidth.find("size not recorded"), std::string::npos) << row.no_bandwidth;
}

// A byte count of 2^63 or more (a damaged or hostile record) is the last bucket: its upper
// bound would be 2^64, past the count's 64 bits (UBSan: shift exponent 64).
TEST(Bandwidth, TheLargestByteCountsAreOneBucket) {
  RunModelBuilder b({"h", "h"});
  const uint32_t comm = b.comm({0, 1}, "w");
  for (const uint64_t bytes : {uint64_t{1} << 63, UINT64_MAX}) b.coll(comm, "AllReduce", bytes, {{1, 10'000}, {5'000, 10'000}});
  const BandwidthRow row = onlyRow(bandwidthTable(b.run));
  EXPECT_EQ(row.count, 2u);
  EXPECT_EQ(row.bucket, "8 EiB or more");
}

TEST(Bandwidth, OpsWithoutGpuTimesSayWhy) {
  RunModelBuilder b({"h", "h"});
  const uint32_t comm = b.comm({0, 1}, "w");
  b.p2p(comm, "Send", 0, 1, 4096, {0, 0}, {0, 0});
  const BandwidthRow row = onlyRow(bandwidthTable(b.run));
  EXPECT_EQ(row.count, 1u);
  EXPECT_EQ(row.timed, 0u);
  EXPECT_NE(row.no_bandwidth.find("no GPU times"), std::string::npos) << row.no_bandwidth;
}

TEST(Bandwidth, PointToPointUsesTheShorterSideAndFactorOne) {
  RunModelBuilder b({"h", "h"});
  const uint32_t comm = b.comm({0, 1}, "w");
  b.p2p(comm, "Send", 0, 1, 2 * kMiB, {0, 300'000}, {200'000, 300'000});
  const BandwidthRow row = onlyRow(bandwidthTable(b.run));
  EXPECT_EQ(row.func, "Send");
  EXPECT_EQ(row.algo, "");
  EXPECT_EQ(row.bytes, 2 * kMiB);
  EXPECT_DOUBLE_EQ(row.time_us_p50, 100.0);
  EXPECT_DOUBLE_EQ(row.busbw_gbs_p50, row.algbw_gbs_p50);
}

// Two AlltoAll calls of 1 MiB per peer on 4 ranks (24 pieces): two instances of nccl-tests'
// S = 4 MiB, timed by the last arriver's span, busBw = algBw x 3/4.
TEST(Bandwidth, AlltoAllCountsCallsWithNcclTestsSizeAndFactor) {
  RunModelBuilder b({"h", "h", "h", "h"});
  const uint32_t comm = b.comm({0, 1, 2, 3}, "tp");
  for (int call = 0; call < 2; ++call)  // everyone stops at 1000 us; rank 3 arrived last, 200 us before
    b.alltoall(comm, kMiB, {{1, 1'000'000}, {300'000, 1'000'000}, {600'000, 1'000'000}, {800'000, 1'000'000}});
  const BandwidthRow row = onlyRow(bandwidthTable(b.run));
  EXPECT_EQ(row.func, "AlltoAll");
  EXPECT_EQ(row.count, 2u);
  EXPECT_EQ(row.timed, 2u);
  EXPECT_EQ(row.bytes, 4 * kMiB);
  EXPECT_EQ(row.bucket, "4-8 MiB");
  EXPECT_EQ(row.algo, "");
  EXPECT_DOUBLE_EQ(row.time_us_p50, 200.0);
  EXPECT_DOUBLE_EQ(row.algbw_gbs_p50, 4.0 * kMiB / 200'000);
  EXPECT_DOUBLE_EQ(row.busbw_gbs_p50, row.algbw_gbs_p50 * 0.75);
  EXPECT_EQ(row.no_bandwidth, "");
}

}  // namespace
