// What the real libnccl.so.2 of the dev image (NCCL 2.28.9, no GPU, no driver) does with
// commtrace as its profiler plugin. NCCL loads the profiler plugin from inside a
// successful communicator init (ncclProfilerPluginInit in initTransportsRank); without a
// GPU, ncclCommInitRank fails in cudaGetDevice first, so NCCL never opens the plugin and
// commtrace never records: no thread, no file. These tests pin that down, so that a change
// in it (a newer NCCL, a GPU in CI) is noticed rather than assumed.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "tests/support/temp_dir.h"

namespace {

constexpr const char* kPlugin = COMMTRACE_SO_PATH;
constexpr const char* kNccl = REAL_NCCL_PATH;

struct UniqueId {
  char bytes[128];  // ncclUniqueId: NCCL_UNIQUE_ID_BYTES
};
using GetUniqueId = int (*)(UniqueId*);
using CommInitRank = int (*)(void** comm, int n_ranks, UniqueId id, int rank);
using GetLastError = const char* (*)(void*);

enum ChildExit { kInitFailedAndPluginNeverLoaded = 0, kNoNccl = 10, kInitSucceeded, kPluginLoaded };

// In a child: the communicator init an application would do, with commtrace named as the
// profiler plugin. Reports NCCL's error text on stderr.
int initOneRankCommunicator(const std::string& dir) {
  setenv("NCCL_PROFILER_PLUGIN", kPlugin, 1);
  setenv("COMMTRACE_DIR", dir.c_str(), 1);
  void* nccl = dlopen(kNccl, RTLD_NOW | RTLD_LOCAL);
  if (nccl == nullptr) return kNoNccl;
  auto get_id = reinterpret_cast<GetUniqueId>(dlsym(nccl, "ncclGetUniqueId"));
  auto init = reinterpret_cast<CommInitRank>(dlsym(nccl, "ncclCommInitRank"));
  auto last_error = reinterpret_cast<GetLastError>(dlsym(nccl, "ncclGetLastError"));
  if (get_id == nullptr || init == nullptr) return kNoNccl;
  UniqueId id{};
  const int id_result = get_id(&id);
  void* comm = nullptr;
  const int result = init(&comm, 1, id, 0);
  std::fprintf(stderr, "ncclGetUniqueId -> %d, ncclCommInitRank -> %d (%s)\n", id_result, result,
               last_error != nullptr ? last_error(nullptr) : "?");
  if (result == 0) return kInitSucceeded;
  if (dlopen(kPlugin, RTLD_NOW | RTLD_NOLOAD) != nullptr) return kPluginLoaded;
  return kInitFailedAndPluginNeverLoaded;
}

TEST(RealNcclTest, WithoutAGpuNcclNeverLoadsThePluginAndNothingIsRecorded) {
  if (!std::filesystem::exists(kNccl)) GTEST_SKIP() << "no libnccl.so.2 at " << kNccl;
  commtrace::testutil::TempDir dir;
  std::fflush(nullptr);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(initOneRankCommunicator(dir.path()));
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "signal " << WTERMSIG(status);
  if (WEXITSTATUS(status) == kInitSucceeded) GTEST_SKIP() << "a GPU is present: run tests/gpu/ instead";
  EXPECT_EQ(WEXITSTATUS(status), kInitFailedAndPluginNeverLoaded) << "see ChildExit";
  EXPECT_TRUE(std::filesystem::is_empty(dir.path())) << "a process that recorded nothing writes no file";
}

}  // namespace
