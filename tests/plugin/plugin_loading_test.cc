// libcommtrace.so found and loaded the ways NCCL finds its profiler plugin (reference
// section 1): dlopen(RTLD_NOW|RTLD_LOCAL) by absolute path, by the libnccl-profiler-<name>.so
// name on the library path, and through dlopen(NULL) when preloaded with
// NCCL_PROFILER_PLUGIN=STATIC_PLUGIN; plus NCCL's dlclose at the last communicator's
// finalize and reload at the next init. Each case runs in a fresh process (this binary,
// re-executed with a different environment) and is checked through the trace file it
// leaves behind.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "nccl-plugin/profiler_abi.h"
#include "sink/reader.h"
#include "tests/support/run_program.h"
#include "tests/support/temp_dir.h"

using namespace commtrace;
using namespace commtrace::nccl;

namespace {

constexpr const char* kLibrary = COMMTRACE_SO_PATH;
constexpr const char* kChildMode = "COMMTRACE_TEST_LOADING_CHILD";

std::string libraryDir() { return std::filesystem::path(kLibrary).parent_path().string(); }

// The newest ncclProfiler_vN the handle offers, as NCCL 2.31 searches them.
const ProfilerV5* bindNewest(void* handle, std::string& bound) {
  for (const char* symbol : kProfilerSymbols) {
    if (void* table = dlsym(handle, symbol)) {
      bound = symbol;
      // v5, v6 and v7 share the table layout and every field this test fills.
      return static_cast<const ProfilerV5*>(table);
    }
  }
  return nullptr;
}

int g_mask = 0;

// One communicator with one AllReduce, as NCCL 2.28 reports it (no KernelCh: the mask
// asks for them, but a communicator may also be finalized before any arrive).
bool playOneCommunicator(const ProfilerV5& t, uint64_t comm_id) {
  void* ctx = nullptr;
  if (t.init(&ctx, comm_id, &g_mask, "loading", 1, 2, 0, nullptr) != kSuccess) return false;
  EventDescrV5 api{};
  api.type = kCollApi;
  api.u.coll_api = CollApiV5{"AllReduce", 16, "ncclFloat32", 0, nullptr, false};
  void* api_handle = nullptr;
  t.start_event(ctx, &api_handle, &api);
  EventDescrV5 coll{};
  coll.type = kColl;
  coll.parent_obj = api_handle;
  coll.u.coll = CollV5{CollV4{0, "AllReduce", nullptr, nullptr, 16, 0, "ncclFloat32", 0, 8, "RING", "SIMPLE"}, nullptr};
  void* coll_handle = nullptr;
  t.start_event(ctx, &coll_handle, &coll);
  t.stop_event(coll_handle);
  t.stop_event(api_handle);
  return t.finalize(ctx) == kSuccess && api_handle != nullptr && coll_handle != nullptr;
}

// The child's side: load as told by the mode, play, exit normally (the library's
// destructor writes the file). Exit codes say what went wrong.
int runChild(const std::string& mode) {
  if (mode == "preload-env") {
    char real[PATH_MAX];
    const char* value = std::getenv("NCCL_PROFILER_PLUGIN");
    return value != nullptr && realpath(kLibrary, real) != nullptr && std::strcmp(value, real) == 0 ? 0 : 16;
  }
  void* handle = nullptr;
  if (mode == "path" || mode == "reload") handle = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  if (mode == "name") handle = dlopen("libnccl-profiler-commtrace.so", RTLD_NOW | RTLD_LOCAL);
  if (mode == "static") handle = dlopen(nullptr, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return 10;
  std::string bound;
  const ProfilerV5* table = bindNewest(handle, bound);
  if (table == nullptr || bound != "ncclProfiler_v7") return 11;
  if (!playOneCommunicator(*table, 0x10AD01)) return 12;
  if (!playOneCommunicator(*table, 0x10AD02)) return 13;  // a second communicator
  if (mode == "reload") {
    for (uint64_t round = 0; round < 3; ++round) {  // NCCL: dlclose at the last finalize, reload at the next init
      if (dlclose(handle) != 0) return 14;
      handle = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
      table = handle != nullptr ? bindNewest(handle, bound) : nullptr;
      if (table == nullptr || !playOneCommunicator(*table, 0x10AD10 + round)) return 15;
    }
  }
  return 0;
}

// Runs this binary's child mode in `mode`, with the run directory and extra environment.
testutil::ProgramResult runInChild(const std::string& mode, const std::string& dir,
                                   std::map<std::string, std::optional<std::string>> env) {
  env[kChildMode] = mode;
  env["COMMTRACE_DIR"] = dir;
  env.try_emplace("NCCL_PROFILER_PLUGIN", std::nullopt);
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  return testutil::runProgram({self, "--gtest_filter=PluginLoadingChild.Run"}, dir, env);
}

// Communicator ids and Coll records in the one trace file of the run directory.
struct TraceSummary {
  std::vector<uint64_t> comm_ids;
  size_t colls = 0;
  trace::v1::FileHeader header;
};

TraceSummary readRun(const std::string& dir) {
  TraceSummary summary;
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".ctrace") files.push_back(entry.path().string());
  }
  EXPECT_EQ(files.size(), 1u) << "one file per process";
  if (files.empty()) return summary;
  TraceReader reader;
  std::string error;
  EXPECT_TRUE(reader.open(files[0], error)) << error;
  summary.header = reader.header();
  DecodedChunk chunk;
  while (reader.next(chunk)) {
    for (const RecordSlot& s : chunk.records) {
      if (s.kind == RecordKind::kCommInfo) summary.comm_ids.push_back(s.payload.comm_info.comm_id);
      if (s.kind == RecordKind::kColl) ++summary.colls;
    }
  }
  return summary;
}

TEST(PluginLoadingChild, Run) {
  const char* mode = std::getenv(kChildMode);
  if (mode == nullptr) GTEST_SKIP() << "runs only as the child of a PluginLoadingTest";
  std::exit(runChild(mode));
}

TEST(PluginLoadingTest, ByAbsolutePath) {
  testutil::TempDir dir;
  const testutil::ProgramResult child = runInChild("path", dir.path(), {});
  ASSERT_EQ(child.exit_code, 0) << child.err;
  const TraceSummary run = readRun(dir.path());
  EXPECT_EQ(run.comm_ids, (std::vector<uint64_t>{0x10AD01, 0x10AD02}));
  EXPECT_EQ(run.colls, 2u);
}

// The file header says who the process is in its job (torchrun's variables, NCCL's host
// identity) and the flusher period COMMTRACE_FLUSH_MS asked for.
TEST(PluginLoadingTest, FileHeaderTakesLauncherIdentityAndSettings) {
  testutil::TempDir dir;
  const auto child = runInChild("path", dir.path(),
                                {{"RANK", "5"}, {"LOCAL_RANK", "1"}, {"WORLD_SIZE", "8"},
                                 {"TORCHELASTIC_RUN_ID", "job-42"}, {"TORCHELASTIC_RESTART_COUNT", "2"},
                                 {"NCCL_HOSTID", "rack3-node7"}, {"COMMTRACE_FLUSH_MS", "50"}});
  ASSERT_EQ(child.exit_code, 0) << child.err;
  const trace::v1::FileHeader header = readRun(dir.path()).header;
  EXPECT_EQ(header.rank(), 5);
  EXPECT_EQ(header.local_rank(), 1);
  EXPECT_EQ(header.world_size(), 8);
  EXPECT_EQ(header.job_id(), "job-42");
  EXPECT_EQ(header.restart_count(), 2u);
  EXPECT_EQ(header.nccl_host_id(), "rack3-node7");
  EXPECT_EQ(header.flush_period_ms(), 50u);
}

TEST(PluginLoadingTest, ByProfilerNameOnTheLibraryPath) {
  testutil::TempDir dir;
  const testutil::ProgramResult child = runInChild("name", dir.path(), {{"LD_LIBRARY_PATH", libraryDir()}});
  ASSERT_EQ(child.exit_code, 0) << child.err;
  EXPECT_EQ(readRun(dir.path()).colls, 2u);
}

TEST(PluginLoadingTest, PreloadedWithStaticPlugin) {
  testutil::TempDir dir;
  const testutil::ProgramResult child = runInChild("static", dir.path(),
                                       {{"LD_PRELOAD", kLibrary}, {"NCCL_PROFILER_PLUGIN", "STATIC_PLUGIN"}});
  ASSERT_EQ(child.exit_code, 0) << child.err;
  EXPECT_EQ(readRun(dir.path()).colls, 2u);
  EXPECT_EQ(child.err.find("commtrace: NCCL_PROFILER_PLUGIN"), std::string::npos) << "it was set";
}

TEST(PluginLoadingTest, DlcloseAndReloadKeepRecordingIntoOneFile) {
  testutil::TempDir dir;
  const testutil::ProgramResult child = runInChild("reload", dir.path(), {});
  ASSERT_EQ(child.exit_code, 0) << child.err;
  const TraceSummary run = readRun(dir.path());
  EXPECT_EQ(run.comm_ids.size(), 5u);
  EXPECT_EQ(run.colls, 5u);
}

// Preloaded with NCCL_PROFILER_PLUGIN unset, the constructor points NCCL at the library
// and says so once.
TEST(PluginLoadingTest, PreloadSetsNcclProfilerPluginWhenUnset) {
  testutil::TempDir dir;
  const testutil::ProgramResult child = runInChild("preload-env", dir.path(), {{"LD_PRELOAD", kLibrary}});
  EXPECT_EQ(child.exit_code, 0) << "the child's NCCL_PROFILER_PLUGIN is not the library's real path";
  char real[PATH_MAX];
  ASSERT_NE(realpath(kLibrary, real), nullptr);
  const std::string line = child.err.substr(0, child.err.find('\n'));
  EXPECT_EQ(line.rfind("commtrace: set NCCL_PROFILER_PLUGIN", 0), 0u) << child.err;
  EXPECT_EQ(line.substr(line.size() - std::strlen(real) - 4), std::string(" to ") + real) << child.err;
}

}  // namespace
