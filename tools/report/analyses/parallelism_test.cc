// recognizeParallelism on communicators and bandwidth rows as the report has them: each
// pattern from what a communicator ran, groups of one shape as one row.
#include "tools/report/analyses/parallelism.h"

#include <gtest/gtest.h>

#include "tools/report/evidence_words.h"

namespace commtrace::report {
namespace {

CommunicatorRow comm(uint64_t id, const char* name, int size, int hosts) { return {.id = id, .name = name, .size = size, .hosts = hosts}; }

BandwidthRow ops(uint64_t comm, const char* func, uint64_t count, uint64_t bytes) {
  BandwidthRow b;
  b.comm = comm;
  b.func = func;
  b.count = count;
  b.bytes = bytes;
  b.bucket = "bucket of " + std::to_string(bytes);
  return b;
}

constexpr uint64_t kMiB = 1u << 20;

// The rows as the report has them: recognised, then said in words.
std::vector<ParallelismRow> recognized(const std::vector<CommunicatorRow>& comms, const std::vector<BandwidthRow>& bandwidth, double steps,
                                       int ranks) {
  std::vector<ParallelismRow> rows = recognizeParallelism(comms, bandwidth, steps, ranks);
  for (ParallelismRow& row : rows) describeParallelism(row);
  return rows;
}

TEST(Parallelism, EachPatternFromWhatTheCommunicatorRan) {
  // 16 ranks on 2 hosts, 10 steps: TP 8 inside each host, FSDP across them, an expert AlltoAll.
  const std::vector<CommunicatorRow> comms{comm(1, "tp0", 8, 1), comm(2, "tp1", 8, 1), comm(3, "fsdp0", 2, 2),
                                           comm(4, "moe", 16, 2), comm(5, "world", 16, 2)};
  const std::vector<BandwidthRow> bandwidth{
      ops(1, "AllReduce", 480, 8 * kMiB), ops(2, "AllReduce", 480, 8 * kMiB),
      ops(3, "AllGather", 400, 64 * kMiB), ops(3, "ReduceScatter", 200, 64 * kMiB),
      ops(4, "AlltoAll", 40, 2 * kMiB),
      ops(5, "AllReduce", 10, 4)};  // the loss: too small to be data parallel
  const std::vector<ParallelismRow> rows = recognized(comms, bandwidth, 10, 16);
  ASSERT_EQ(rows.size(), 4u);
  std::map<std::string, const ParallelismRow*> by_kind;
  for (const ParallelismRow& r : rows) by_kind[r.kinds] = &r;
  ASSERT_TRUE(by_kind.count("tp"));
  EXPECT_EQ(by_kind["tp"]->groups, 2);
  EXPECT_EQ(by_kind["tp"]->size, 8);
  EXPECT_TRUE(by_kind["tp"]->within_host);
  EXPECT_EQ(by_kind["tp"]->comm_labels, (std::vector<std::string>{"tp0", "tp1"}));
  EXPECT_EQ(by_kind["tp"]->comms, "tp0, tp1");
  EXPECT_EQ(by_kind["tp"]->evidence, "AllReduce 48 per step (bucket of 8388608)");
  ASSERT_TRUE(by_kind.count("fsdp"));
  EXPECT_EQ(by_kind["fsdp"]->pattern.rfind("fully sharded data parallel", 0), 0u);
  ASSERT_TRUE(by_kind.count("ep"));
  ASSERT_TRUE(by_kind.count("other")) << "a 4-byte AllReduce a step is no data parallelism";
}

TEST(Parallelism, OneHostsWorldIsDataParallelAndItsGroupsTensorParallel) {
  const std::vector<BandwidthRow> world_only{ops(1, "AllReduce", 50, 25 * kMiB)};
  const std::vector<ParallelismRow> ddp = recognized({comm(1, "world", 8, 1)}, world_only, 10, 8);
  ASSERT_EQ(ddp.size(), 1u);
  EXPECT_EQ(ddp[0].kinds, "ddp") << "8 GPUs of one host doing DDP: their world";
  const std::vector<ParallelismRow> tp = recognized({comm(1, "half", 4, 1)}, world_only, 10, 8);
  EXPECT_EQ(tp[0].kinds, "tp");
}

TEST(Parallelism, OneAllGatherPerReduceScatterIsShardedNotFullySharded) {
  const std::vector<ParallelismRow> rows = recognized(
      {comm(1, "dp", 4, 1)}, {ops(1, "AllGather", 20, 64 * kMiB), ops(1, "ReduceScatter", 20, 64 * kMiB)}, 10, 4);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].kinds, "zero");
}

TEST(Parallelism, WithoutStepsCountsAreSaidInAll) {
  const std::vector<ParallelismRow> rows = recognized({comm(1, "pp", 2, 2)}, {ops(1, "Send", 12, 8 * kMiB)}, 0, 2);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].kinds, "pp");
  EXPECT_EQ(rows[0].evidence, "Send 12 in all (bucket of 8388608)");
}

}  // namespace
}  // namespace commtrace::report
