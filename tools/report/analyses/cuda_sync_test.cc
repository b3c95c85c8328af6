// The CUDA sync analysis on hand-built runs: per process, per call kind and per stream,
// the count, failures and CPU time (total, p50, max) of the calls the preload face timed,
// _ptsz entry points folded into their plain twins and cudaStreamLegacy into stream 0.
#include "tools/report/analyses/cuda_sync.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "tests/support/run_model_builder.h"
#include "tools/report/build_report.h"

namespace commtrace::report {
namespace {

using testutil::RunModelBuilder;

constexpr uint64_t kStreamA = 0x5a000, kStreamB = 0x5b000;

class CallsOf {
 public:
  CallsOf(RunModel& run, int process) : tally_(run.timelines[process].cuda_sync) {}

  // A call taking `us` microseconds, started after the previous one.
  CallsOf& add(const std::string& name, uint64_t stream, double us, int result = 0) {
    const uint64_t start = next_start_;
    const uint64_t end = start + static_cast<uint64_t>(us * 1000);
    tally_.add(name, stream, start, end, result != 0);
    next_start_ = end + 1000;
    return *this;
  }

 private:
  CudaSyncTally& tally_;
  uint64_t next_start_ = 5'000'000;
};

const CudaSyncCallRow* callNamed(const CudaSyncRow& row, const std::string& call) {
  for (const CudaSyncCallRow& c : row.calls)
    if (c.call == call) return &c;
  return nullptr;
}

TEST(CudaSync, CountsTimeAndFailuresPerCallKindAndStream) {
  RunModelBuilder b({"a", "a"});
  CallsOf(b.run, 0)
      .add("cudaStreamSynchronize", kStreamA, 100)
      .add("cudaStreamSynchronize", kStreamA, 300)
      .add("cudaStreamSynchronize", kStreamB, 50, /*result=*/700)
      .add("cudaStreamSynchronize_ptsz", kStreamA, 200)
      .add("cudaDeviceSynchronize", 0, 1000)
      .add("cudaEventSynchronize", 0, 40)
      .add("cudaEventSynchronize", 0, 20)
      .add("cudaStreamWaitEvent", kStreamB, 2);
  const std::vector<CudaSyncRow> rows = cudaSyncWaits(b.run);
  ASSERT_EQ(rows.size(), 1u);  // rank 1 made no sync call
  const CudaSyncRow& r = rows[0];
  EXPECT_EQ(r.rank, 0);
  EXPECT_EQ(r.host, "a");
  EXPECT_DOUBLE_EQ(r.blocked_us, 100 + 300 + 50 + 200 + 1000 + 40 + 20 + 2);

  // Most time first.
  ASSERT_EQ(r.calls.size(), 4u);
  EXPECT_EQ(r.calls[0].call, "cudaDeviceSynchronize");
  EXPECT_EQ(r.calls[1].call, "cudaStreamSynchronize");
  EXPECT_EQ(r.calls[2].call, "cudaEventSynchronize");
  EXPECT_EQ(r.calls[3].call, "cudaStreamWaitEvent");

  const CudaSyncCallRow& stream_sync = r.calls[1];
  EXPECT_EQ(stream_sync.stats.count, 4u);
  EXPECT_EQ(stream_sync.stats.failed, 1u);
  EXPECT_DOUBLE_EQ(stream_sync.stats.total_us, 650);
  EXPECT_DOUBLE_EQ(stream_sync.stats.p50_us, 100);  // nearest rank of {50, 100, 200, 300}
  EXPECT_DOUBLE_EQ(stream_sync.stats.max_us, 300);
  ASSERT_EQ(stream_sync.streams.size(), 2u);
  EXPECT_EQ(stream_sync.streams[0].stream, kStreamA);  // 600 us, the _ptsz call included
  EXPECT_EQ(stream_sync.streams[0].stats.count, 3u);
  EXPECT_DOUBLE_EQ(stream_sync.streams[0].stats.total_us, 600);
  EXPECT_DOUBLE_EQ(stream_sync.streams[0].stats.p50_us, 200);
  EXPECT_EQ(stream_sync.streams[1].stream, kStreamB);
  EXPECT_EQ(stream_sync.streams[1].stats.failed, 1u);

  const CudaSyncCallRow& device = r.calls[0];
  EXPECT_EQ(device.stats.count, 1u);
  EXPECT_TRUE(device.streams.empty());  // takes no stream
  EXPECT_TRUE(r.calls[2].streams.empty());
  EXPECT_DOUBLE_EQ(r.calls[2].stats.max_us, 40);
  ASSERT_EQ(r.calls[3].streams.size(), 1u);
  EXPECT_EQ(r.calls[3].streams[0].stream, kStreamB);
}

TEST(CudaSync, DefaultStreamsKeepTheirIdentityAndLegacyHandleIsStreamZero) {
  RunModelBuilder b({"a"});
  CallsOf(b.run, 0)
      .add("cudaStreamSynchronize", 0, 10)
      .add("cudaStreamSynchronize", 1, 10)        // cudaStreamLegacy: the same stream as 0
      .add("cudaStreamSynchronize_ptsz", 2, 30);  // the wrapper records a _ptsz null stream as 2
  const std::vector<CudaSyncRow> rows = cudaSyncWaits(b.run);
  ASSERT_EQ(rows.size(), 1u);
  const CudaSyncCallRow* sync = callNamed(rows[0], "cudaStreamSynchronize");
  ASSERT_NE(sync, nullptr);
  ASSERT_EQ(sync->streams.size(), 2u);
  EXPECT_EQ(sync->streams[0].stream, 2u);
  EXPECT_EQ(sync->streams[0].stats.count, 1u);
  EXPECT_EQ(sync->streams[1].stream, 0u);
  EXPECT_EQ(sync->streams[1].stats.count, 2u);
}

TEST(CudaSync, OtherCudaCallsAndProcessesWithoutSyncCallsGiveNoRows) {
  RunModelBuilder b({"a", "b"});
  CallsOf(b.run, 0).add("cudaMemcpyAsync", kStreamA, 10);
  EXPECT_TRUE(cudaSyncWaits(b.run).empty());
}

TEST(CudaSync, FindingNamesTheLongestAndShortestBlockedRanks) {
  RunModelBuilder b({"a", "a", "b"});
  CallsOf(b.run, 0).add("cudaStreamSynchronize", kStreamA, 2000).add("cudaDeviceSynchronize", 0, 500);
  CallsOf(b.run, 2).add("cudaStreamSynchronize", kStreamA, 250);
  const Report report = buildReport(b.run, alignClocks(b.run));
  ASSERT_EQ(report.cuda_sync.size(), 2u);
  EXPECT_EQ(report.cuda_sync[1].rank, 2);
  const std::string want =
      "CPU blocked in CUDA synchronisation: rank 0 the longest, 2.5 ms in 2 calls (2 ms of it in "
      "cudaStreamSynchronize); rank 2 the shortest, 250 us.";
  EXPECT_NE(std::find(report.findings.begin(), report.findings.end(), want), report.findings.end())
      << ::testing::PrintToString(report.findings);
}

}  // namespace
}  // namespace commtrace::report
