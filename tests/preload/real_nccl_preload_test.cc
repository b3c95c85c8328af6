// The real libnccl.so.2 of the dev image (NCCL 2.28.9, no GPU, no driver) under
// LD_PRELOAD=libcommtrace.so, on the paths it can take without a GPU: communicator
// creation fails with NCCL's own error, ops on a NULL communicator are refused, groups
// carry the refusal to ncclGroupEnd. real_nccl_child makes every call through the wrappers
// and then directly into NCCL's pnccl twins: the results must be the same, and nothing
// NCCL refused may be recorded as an op.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "sink/reader.h"
#include "tests/support/run_program.h"
#include "tests/support/temp_dir.h"

namespace {

using namespace commtrace;

constexpr const char* kLibrary = COMMTRACE_SO_PATH;
constexpr const char* kChild = REAL_NCCL_CHILD_PATH;

constexpr int kSuccess = 0, kUnhandledCudaError = 1, kInvalidArgument = 4;

struct CallResult {
  std::string api;
  int wrapped = -1, direct = -1;
};

TEST(RealNcclPreloadTest, WrappedCallsAnswerExactlyWhatNcclAnswersAndRecordNoOp) {
  testutil::TempDir dir;
  const testutil::ProgramResult r = testutil::runProgram(
      {kChild, "errors", "0", "1", "real-nccl"}, dir.path(),
      {{"LD_PRELOAD", kLibrary}, {"COMMTRACE_DIR", dir.path()}, {"NCCL_PROFILER_PLUGIN", std::nullopt}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<CallResult> calls;
  for (const std::string& line : testutil::linesOf(r.out)) {
    char api[64];
    CallResult c;
    ASSERT_EQ(std::sscanf(line.c_str(), "%63s %d %d", api, &c.wrapped, &c.direct), 3) << line;
    c.api = api;
    calls.push_back(c);
  }
  ASSERT_FALSE(calls.empty()) << r.err;
  if (calls[0].direct == kSuccess) GTEST_SKIP() << "a GPU is present: communicator creation succeeded";

  std::map<std::string, int> first_result;
  for (const CallResult& c : calls) {
    EXPECT_EQ(c.wrapped, c.direct) << c.api;
    first_result.try_emplace(c.api, c.wrapped);
  }
  // What NCCL 2.28.9 answers here (docs/nccl-profiler.md, "The real NCCL without a GPU").
  EXPECT_EQ(first_result["ncclCommInitRank"], kUnhandledCudaError);
  EXPECT_EQ(first_result["ncclCommInitAll"], kUnhandledCudaError);
  EXPECT_EQ(first_result["ncclAllReduce"], kInvalidArgument);
  EXPECT_EQ(first_result["ncclGroupStart"], kSuccess);

  // The file holds spans of the refused calls, each with NCCL's result, and no op.
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    if (entry.path().extension() == ".ctrace") files.push_back(entry.path().string());
  }
  ASSERT_EQ(files.size(), 1u);
  TraceReader reader;
  std::string error;
  ASSERT_TRUE(reader.open(files[0], error)) << error;
  std::map<std::string, std::vector<int>> span_results;
  size_t ops = 0, comm_infos = 0;
  DecodedChunk chunk;
  while (reader.next(chunk)) {
    for (const RecordSlot& s : chunk.records) {
      ops += s.kind == RecordKind::kColl || s.kind == RecordKind::kP2p;
      comm_infos += s.kind == RecordKind::kCommInfo;
      if (s.kind == RecordKind::kApiSpan) {
        span_results[std::string(reader.str(s.payload.api_span.name))].push_back(s.payload.api_span.result);
      }
    }
  }
  EXPECT_EQ(ops, 0u);
  EXPECT_EQ(comm_infos, 0u) << "no communicator was created";
  for (const CallResult& c : calls) {
    if (c.wrapped == kSuccess) continue;  // successful group calls and destroys of NULL
    const auto& results = span_results[c.api];
    EXPECT_NE(std::find(results.begin(), results.end(), c.wrapped), results.end())
        << c.api << " failed with " << c.wrapped << " but no span says so";
  }
}

}  // namespace
