// kernelBreakdown on tallies built in memory: HTA's kernel types, the top kernels of each
// rank and of the run with their shares, names merged across ranks, ranks in rank order.
#include "tools/report/analyses/kernel_breakdown.h"

#include <gtest/gtest.h>

#include "tests/support/run_model_builder.h"
#include "tools/report/format.h"

namespace commtrace::report {
namespace {

using testutil::RunModelBuilder;

void tally(RunModelBuilder& b, int process, const std::string& name, uint8_t activity, uint64_t count, uint64_t total_ns,
           uint64_t max_ns) {
  b.run.timelines[process].kernels.push_back({b.run.names.intern(name), activity, count, total_ns, max_ns});
}

TEST(KernelBreakdown, TypesAreHtasCommunicationMemoryAndComputation) {
  EXPECT_EQ(kernelType("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 1), "communication");
  EXPECT_EQ(kernelType("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t", 1), "communication");
  EXPECT_EQ(kernelType("Memcpy HtoD", 2), "memory");
  EXPECT_EQ(kernelType("Memset", 3), "memory");
  EXPECT_EQ(kernelType("ampere_sgemm_128x64_nn", 1), "computation");
}

TEST(KernelBreakdown, TopKernelsPerRankAndOverTheRunWithTheirShares) {
  RunModelBuilder b({"h0", "h1"});
  // Rank 1's tallies are listed first in process order, as a file order may have it.
  std::swap(b.run.processes[0].rank, b.run.processes[1].rank);
  tally(b, 1, "gemm", 1, 100, 600'000, 9'000);  // rank 0 (process 1), most time first
  tally(b, 1, "ncclDevKernel_AllReduce", 1, 10, 300'000, 40'000);
  tally(b, 1, "Memcpy HtoD", 2, 4, 100'000, 30'000);
  tally(b, 0, "ncclDevKernel_AllReduce", 1, 10, 900'000, 95'000);  // rank 1 (process 0)
  tally(b, 0, "gemm", 1, 100, 100'000, 2'000);

  const KernelBreakdown k = kernelBreakdown(b.run, 2);
  ASSERT_EQ(k.types.size(), 2u);
  EXPECT_EQ(k.types[0].rank, 0);
  EXPECT_DOUBLE_EQ(k.types[0].computation_us, 600);
  EXPECT_DOUBLE_EQ(k.types[0].communication_us, 300);
  EXPECT_DOUBLE_EQ(k.types[0].memory_us, 100);
  EXPECT_DOUBLE_EQ(k.types[1].communication_us, 900);

  ASSERT_EQ(k.per_rank.size(), 4u);  // two per rank
  EXPECT_EQ(k.per_rank[0].rank, 0);
  EXPECT_EQ(k.per_rank[0].name, "gemm");
  EXPECT_DOUBLE_EQ(k.per_rank[0].share_pct, 60);
  EXPECT_DOUBLE_EQ(k.per_rank[0].avg_us, 6);
  EXPECT_EQ(k.per_rank[2].rank, 1);
  EXPECT_EQ(k.per_rank[2].name, "ncclDevKernel_AllReduce");
  EXPECT_DOUBLE_EQ(k.per_rank[2].share_pct, 90);

  ASSERT_EQ(k.per_rank_by_count.size(), 4u);
  EXPECT_EQ(k.per_rank_by_count[0].name, "gemm");  // rank 0: 100 of them
  EXPECT_EQ(k.per_rank_by_count[1].name, "ncclDevKernel_AllReduce");
  EXPECT_EQ(k.per_rank_by_count[2].rank, 1);
  EXPECT_EQ(k.per_rank_by_count[2].name, "gemm");  // rank 1: 100 gemms outnumber 10 all-reduces, which took more time
  ASSERT_EQ(k.top.size(), 2u);  // 2,000 us in all
  EXPECT_EQ(k.top[0].rank, -1);
  EXPECT_EQ(k.top[0].name, "ncclDevKernel_AllReduce");
  EXPECT_EQ(k.top[0].ranks, 2);
  EXPECT_EQ(k.top[0].count, 20u);
  EXPECT_DOUBLE_EQ(k.top[0].total_us, 1200);
  EXPECT_DOUBLE_EQ(k.top[0].max_us, 95);
  EXPECT_DOUBLE_EQ(k.top[0].share_pct, 60);
  EXPECT_EQ(k.top[1].name, "gemm");
  EXPECT_DOUBLE_EQ(k.top[1].share_pct, 35);
}

TEST(KernelBreakdown, NothingWithoutCuptiRecords) {
  RunModelBuilder b({"h0"});
  const KernelBreakdown k = kernelBreakdown(b.run);
  EXPECT_TRUE(k.top.empty());
  EXPECT_TRUE(k.per_rank.empty());
  EXPECT_TRUE(k.types.empty());
}

}  // namespace
}  // namespace commtrace::report

namespace commtrace::report {
namespace {

TEST(KernelBreakdown, TablesShowKernelsWithoutReturnTypeOrParameters) {
  EXPECT_EQ(fmt::kernelName("void at::native::fill_kernel<4, at::native::FillFunctor<float> >(int, at::native::FillFunctor<float>)"),
            "at::native::fill_kernel<4, at::native::FillFunctor<float> >");
  EXPECT_EQ(fmt::kernelName("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"),
            "ncclKernel_AllReduce_RING_LL_Sum_float");
  EXPECT_EQ(fmt::kernelName("Memcpy HtoD (Pinned -> Device)"), "Memcpy HtoD (Pinned -> Device)");
  EXPECT_EQ(fmt::kernelName(std::string(100, 'k')), std::string(77, 'k') + "...");
  EXPECT_EQ(fmt::rankList({2, 3, 4, 5, 9}), "2-5,9");
}

}  // namespace
}  // namespace commtrace::report
