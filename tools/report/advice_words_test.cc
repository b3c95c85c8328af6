// adviceFor: each line only where the report's numbers call for it, and with them.
#include "tools/report/advice_words.h"

#include <gtest/gtest.h>

#include <tuple>

namespace commtrace::report {
namespace {

BandwidthRow row(const char* func, uint64_t bytes, const char* bucket, const char* algo, const char* proto, uint64_t count, double busbw) {
  BandwidthRow b;
  b.comm = 0xabc;
  b.comm_name = "dp";
  b.func = func;
  b.bytes = bytes;
  b.bucket = bucket;
  b.algo = algo;
  b.proto = proto;
  b.count = b.timed = count;
  b.busbw_gbs_p50 = busbw;
  return b;
}

std::vector<const AdviceRow*> ofKind(const std::vector<AdviceRow>& advice, const std::string& kind) {
  std::vector<const AdviceRow*> out;
  for (const AdviceRow& a : advice)
    if (a.kind == kind) out.push_back(&a);
  return out;
}

TEST(Advice, AnotherAlgorithmMeasuredFasterForTheSameSizeIsNamedWithBothFigures) {
  Report r;
  r.bandwidth = {row("AllReduce", 8 << 20, "8-16 MiB", "TREE", "SIMPLE", 50, 20), row("AllReduce", 8 << 20, "8-16 MiB", "RING", "LL128", 40, 31),
                 row("AllReduce", 32 << 20, "32-64 MiB", "RING", "SIMPLE", 50, 30), row("AllReduce", 32 << 20, "32-64 MiB", "TREE", "SIMPLE", 50, 27)};
  const std::vector<AdviceRow> advice = adviceFor(r, 10);
  const auto algo = ofKind(advice, "nccl_algo");
  ASSERT_EQ(algo.size(), 1u) << "30 against 27 GB/s is no call to change";
  EXPECT_NE(algo[0]->advice.find("NCCL_ALGO=Ring NCCL_PROTO=LL128"), std::string::npos) << algo[0]->advice;
  EXPECT_NE(algo[0]->evidence.find("31.00 GB/s (RING/LL128"), std::string::npos) << algo[0]->evidence;
  EXPECT_NE(algo[0]->evidence.find("20.00 GB/s (TREE/SIMPLE"), std::string::npos) << algo[0]->evidence;
}

TEST(Advice, ManySmallCollectivesFarBelowTheLargeOnesBandwidthCallForLargerBuckets) {
  Report r;
  r.bandwidth = {row("AllReduce", 64 << 10, "64-128 KiB", "RING", "LL", 400, 2), row("AllReduce", 32 << 20, "32-64 MiB", "RING", "SIMPLE", 20, 30)};
  const std::vector<AdviceRow> advice = adviceFor(r, 10);
  const auto bucket = ofKind(advice, "bucket_size");
  ASSERT_EQ(bucket.size(), 1u);
  EXPECT_NE(bucket[0]->evidence.find("40 AllReduces of 64-128 KiB a step at busBw 2.00 GB/s"), std::string::npos) << bucket[0]->evidence;
  EXPECT_TRUE(ofKind(adviceFor(r, 0), "bucket_size").empty()) << "without steps, no per-step call";
  r.bandwidth.pop_back();
  EXPECT_TRUE(ofKind(adviceFor(r, 10), "bucket_size").empty()) << "nothing measured says larger ones would be faster";
}

BandwidthRow onChannels(BandwidthRow b, uint8_t channels) {
  b.channels = channels;
  return b;
}

TEST(Advice, ALargeCollectiveOnFewerChannelsAndSlowerCallsForMoreChannels) {
  Report r;
  r.bandwidth = {onChannels(row("AllReduce", 64 << 20, "64-128 MiB", "RING", "SIMPLE", 20, 9), 2),
                 onChannels(row("AllGather", 32 << 20, "32-64 MiB", "RING", "SIMPLE", 20, 38), 8),
                 onChannels(row("AllReduce", 64 << 10, "64-128 KiB", "RING", "LL", 20, 1), 1)};  // small: few channels are NCCL's right choice
  const std::vector<AdviceRow> advice = adviceFor(r, 10);
  const auto channels = ofKind(advice, "nccl_channels");
  ASSERT_EQ(channels.size(), 1u);
  EXPECT_NE(channels[0]->advice.find("NCCL_MIN_NCHANNELS=8"), std::string::npos) << channels[0]->advice;
  EXPECT_NE(channels[0]->evidence.find("AllReduce of 64-128 MiB on dp ran on 2 channels at busBw 9.00 GB/s"),
            std::string::npos)
      << channels[0]->evidence;
  EXPECT_NE(channels[0]->evidence.find("ran on 8 at 38.00 GB/s"), std::string::npos) << channels[0]->evidence;
  // As fast on fewer channels: nothing to gain.
  r.bandwidth[0].busbw_gbs_p50 = 36;
  EXPECT_TRUE(ofKind(adviceFor(r, 10), "nccl_channels").empty());
  // Channels not recorded: no call.
  r.bandwidth[0].busbw_gbs_p50 = 9;
  r.bandwidth[0].channels = r.bandwidth[1].channels = 0;
  EXPECT_TRUE(ofKind(adviceFor(r, 10), "nccl_channels").empty());
}

TEST(Advice, ExposedCommunicationCallsForOverlapTheWayItsParallelismAllows) {
  Report r;
  OverlapRow o;
  o.rank = 3;
  o.available = true;
  o.step_count = 10;
  o.mean_step_us = 1000;
  o.exposed_us = 4000;  // 400 us a step of 1 ms
  r.overlap = {o};
  r.parallelism = {ParallelismRow{.kinds = "ddp", .pattern = "data parallel (DDP)"}};
  const std::vector<AdviceRow> advice = adviceFor(r, 10);
  const auto overlap = ofKind(advice, "overlap");
  ASSERT_EQ(overlap.size(), 1u);
  EXPECT_NE(overlap[0]->advice.find("DDP's buckets"), std::string::npos) << overlap[0]->advice;
  EXPECT_NE(overlap[0]->evidence.find("400 us per step of 1 ms (40.0%)"), std::string::npos) << overlap[0]->evidence;
  r.overlap[0].exposed_us = 2000;
  EXPECT_TRUE(ofKind(adviceFor(r, 10), "overlap").empty()) << "20% of a step";
}

TEST(Advice, NoCulpritNoNumbersNoAdvice) { EXPECT_TRUE(adviceFor(Report{}, 10).empty()); }

// Every flagged straggler gets advice by its class; where its class is unknown, what to
// record to decide it. A rank not flagged gets none.
TEST(Advice, EveryFlaggedStragglerClassGetsItsAdvice) {
  Report r;
  for (const auto& [rank, cls, flagged] : {std::tuple{1, "compute", true}, std::tuple{2, "host", true}, std::tuple{3, "network", true},
                                           std::tuple{4, "unknown", true}, std::tuple{5, "unknown", false}, std::tuple{6, "input", true}}) {
    StragglerRow s;
    s.rank = rank;
    s.cls = cls;
    s.flagged = flagged;
    s.wait_caused_us = 12'000;
    s.delay_fraction = 0.2;
    r.stragglers.ranks.push_back(s);
  }
  const std::vector<AdviceRow> advice = adviceFor(r, 10);
  for (const auto& [kind, subject] : {std::pair{"straggler_compute", "rank 1"}, std::pair{"straggler_host", "rank 2"},
                                      std::pair{"straggler_network", "rank 3"}, std::pair{"straggler_record_more", "rank 4"},
                                      std::pair{"straggler_input", "rank 6"}}) {
    const auto rows = ofKind(advice, kind);
    ASSERT_EQ(rows.size(), 1u) << kind;
    EXPECT_EQ(rows[0]->subject, subject) << kind;
  }
  EXPECT_NE(ofKind(advice, "straggler_record_more")[0]->advice.find("COMMTRACE_CUPTI=1"), std::string::npos);
  EXPECT_NE(ofKind(advice, "straggler_input")[0]->evidence.find("at 20.0% of its synchronizations"), std::string::npos)
      << ofKind(advice, "straggler_input")[0]->evidence;
  for (const AdviceRow& a : advice) EXPECT_NE(a.subject, "rank 5") << "not flagged: " << a.advice;
}

}  // namespace
}  // namespace commtrace::report
