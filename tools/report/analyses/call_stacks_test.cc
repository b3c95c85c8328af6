#include "tools/report/analyses/call_stacks.h"

#include <gtest/gtest.h>

#include "tests/support/own_module.h"

namespace commtrace::report {
namespace {

__attribute__((noinline)) int issuesTheAllReduce(int x) { return x * 5 + 2; }
__attribute__((noinline)) int callsIt(int x) { return x * 7 + 3; }

// Two ranks ran the same program (each at its own load address: the tally has already made
// the addresses the file's): their samples of one stack are one row, named from the file;
// another stack is another row; most estimated ops first.
TEST(CallStacks, RanksSamplesOfOneStackMergeAndAreNamedFromTheFile) {
  const testutil::OwnModule own = testutil::ownModule();
  const std::string& path = own.path;
  const uint64_t bias = own.load_bias;
  RunModel run;
  run.processes.resize(2);
  run.timelines.resize(2);
  run.processes[0].rank = 0;
  run.processes[1].rank = 1;
  const NameId module = run.names.intern(path);
  const NativeFrame site{module, 0, reinterpret_cast<uintptr_t>(&issuesTheAllReduce) + 2 - bias};
  const NativeFrame caller{module, 0, reinterpret_cast<uintptr_t>(&callsIt) + 2 - bias};
  const NativeFrame elsewhere{run.names.intern("/nonexistent/libgone.so"), 0, 0x1000};
  run.timelines[0].comm_by_stack = {{{site, caller}, 2, 20, 2000, 40'000}, {{elsewhere}, 1, 60, 10, 0}};
  run.timelines[1].comm_by_stack = {{{site, caller}, 3, 30, 3000, 60'000}};
  NativeSymbols symbols;
  const std::vector<CallStackRow> rows = commByCallStack(run, symbols);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].site, "libgone.so+0x1000");
  EXPECT_EQ(rows[0].ops, 60u);
  EXPECT_EQ(rows[1].samples, 5u);
  EXPECT_EQ(rows[1].ops, 50u);
  EXPECT_EQ(rows[1].ranks, 2);
  EXPECT_EQ(rows[1].bytes, 5000u);
  EXPECT_DOUBLE_EQ(rows[1].api_us, 100.0);
  EXPECT_DOUBLE_EQ(rows[1].ops_share, 50.0 / 110.0);
  EXPECT_EQ(rows[1].site.rfind("commtrace::report::(anonymous namespace)::issuesTheAllReduce(int) (call_stacks_test.cc:", 0), 0u) << rows[1].site;
  // Outermost first: the caller, then the site.
  EXPECT_LT(rows[1].stack.find("callsIt"), rows[1].stack.find("issuesTheAllReduce")) << rows[1].stack;
  EXPECT_EQ(rows[1].stack.find(';'), rows[1].stack.rfind(';'));
  ASSERT_EQ(symbols.unreadable().size(), 1u);
  EXPECT_EQ(symbols.unreadable()[0].first, "/nonexistent/libgone.so");
}

TEST(CallStacks, UnnamedFramesReadAsModuleAndAddress) {
  EXPECT_EQ(frameText({}, "/nonexistent/libgone.so", 0x1000), "libgone.so+0x1000");
  EXPECT_EQ(frameText({}, "", 0x7f00), "0x7f00");
  EXPECT_EQ(frameText({.function = "f()", .file = "a.cc", .line = 3}, "/x.so", 1), "f() (a.cc:3)");
  EXPECT_EQ(frameText({.function = "f()"}, "/x.so", 1), "f()");
}

// What the text and HTML tables show: the function without namespaces' noise and parameters,
// the site with its line, and the three callers nearest it.
TEST(CallStacks, PeopleReadShortFramesAndTheNearestCallers) {
  EXPECT_EQ(shortFrame("(anonymous namespace)::syncGradients(commtrace::nccl_api::Comm*) (train.cc:23)"), "syncGradients (train.cc:23)");
  EXPECT_EQ(shortFrame("ffi_call"), "ffi_call");
  EXPECT_EQ(shortFrame("libffi.so.8+0x640e"), "libffi.so.8+0x640e");
  EXPECT_EQ(shortFrame("std::vector<int>::push_back(int const&)"), "std::vector<int>::push_back");
  EXPECT_EQ(callersOf("_start;main (t.cc:9);(anonymous namespace)::trainStep(Comm*) (t.cc:33);syncGradients(Comm*) (t.cc:23)", 3),
            "trainStep < main < _start");
  EXPECT_EQ(callersOf("_start;__libc_start_main;main;trainStep;syncGradients", 3), "trainStep < main < __libc_start_main < ...");
  EXPECT_EQ(callersOf("main;f", 3), "main");
  EXPECT_EQ(callersOf("f", 3), "");
}

TEST(CallStacks, EmptyWithoutSamples) {
  RunModel run;
  run.processes.resize(1);
  run.timelines.resize(1);
  NativeSymbols symbols;
  EXPECT_TRUE(commByCallStack(run, symbols).empty());
}

}  // namespace
}  // namespace commtrace::report
