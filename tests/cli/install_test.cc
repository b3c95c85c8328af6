// `cmake --install` puts what a cluster admin needs into a prefix (a module's tree): the
// commtrace command, the NCCL driver it runs for its demo, libcommtrace.so and the
// libnccl-profiler-commtrace.so name NCCL_PROFILER_PLUGIN=commtrace finds; and the installed
// command works from there.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/support/run_program.h"
#include "tests/support/temp_dir.h"

namespace commtrace {
namespace {

namespace fs = std::filesystem;
using testutil::ProgramResult;
using testutil::TempDir;

TEST(Install, PutsTheCommandTheDriverAndTheLibraryUnderThePrefixAndTheyWork) {
  TempDir scratch, prefix;
  const ProgramResult install =
      testutil::runProgram({CMAKE_COMMAND, "--install", COMMTRACE_BUILD_DIR, "--prefix", prefix.path()}, scratch.path());
  ASSERT_EQ(install.exit_code, 0) << install.out << install.err;
  for (const char* file : {"bin/commtrace", "bin/commtrace-nccl-driver", "lib/libcommtrace.so",
                           "lib/libnccl-profiler-commtrace.so"}) {
    EXPECT_TRUE(fs::exists(prefix.path() + "/" + file)) << file;
  }
  EXPECT_EQ(fs::read_symlink(prefix.path() + "/lib/libnccl-profiler-commtrace.so"), "libcommtrace.so");

  const ProgramResult demo =
      testutil::runProgram({prefix.path() + "/bin/commtrace", "demo", "--dir", scratch.path() + "/demo"}, scratch.path());
  EXPECT_EQ(demo.exit_code, 0) << demo.err;
  EXPECT_NE(demo.out.find("rank 6"), std::string::npos) << "the report names the planted straggler:\n" << demo.out;
}

}  // namespace
}  // namespace commtrace
