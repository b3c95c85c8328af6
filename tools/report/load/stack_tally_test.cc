// The report's side of sampled call stacks: a stack's frames reassembled from its records,
// each return address placed in its module's file, and named from that file.
#include "tools/report/load/stack_tally.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "tests/support/own_module.h"
#include "tools/report/load/native_symbols.h"

namespace commtrace::report {
namespace {

struct Names {
  std::map<std::string, NameId, std::less<>> ids;
  std::vector<std::string> texts{""};
  NameId operator()(std::string_view s) {
    if (s.empty()) return 0;
    auto [it, inserted] = ids.try_emplace(std::string(s), static_cast<NameId>(texts.size()));
    if (inserted) texts.emplace_back(s);
    return it->second;
  }
};

StackFramesRecord framesRecord(uint32_t stack, uint16_t first, uint16_t depth, std::initializer_list<uint64_t> pcs) {
  StackFramesRecord r{.stack = stack, .first = first, .depth = depth};
  std::copy(pcs.begin(), pcs.end(), r.pc);
  return r;
}

TEST(StackTally, AStackOfSeveralRecordsIsPlacedInItsModules) {
  StackTally tally;
  const ModuleRecord lib{.start = 0x7f0000000000, .end = 0x7f0000100000, .load_bias = 0x7f0000000000};
  tally.addModule(lib, "/usr/lib/libtrainer.so", "abcd");
  const ModuleRecord exe{.start = 0x400000, .end = 0x500000, .load_bias = 0};
  tally.addModule(exe, "/opt/train", "");
  // 14 frames: 12 in the first record, 2 in the second (which may arrive first).
  tally.addFrames(framesRecord(7, 12, 14, {0x401000, 0x99}));
  tally.addFrames(framesRecord(7, 0, 14, {0x7f0000001234, 0x7f0000002000, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
  tally.addSample({.bytes = 100, .cpu_start_ns = 10, .cpu_end_ns = 30, .stack = 7, .weight = 3});
  tally.addSample({.bytes = 100, .cpu_start_ns = 50, .cpu_end_ns = 60, .stack = 7, .weight = 1});
  tally.addSample({.bytes = 8, .stack = 9, .weight = 2});  // its frames never arrived
  Names names;
  const std::vector<StackComm> rows = tally.finish(std::ref(names)).stacks;
  ASSERT_EQ(rows.size(), 2u);
  const StackComm& known = rows[0].frames.empty() ? rows[1] : rows[0];
  const StackComm& lost = rows[0].frames.empty() ? rows[0] : rows[1];
  EXPECT_EQ(known.samples, 2u);
  EXPECT_EQ(known.ops, 4u);
  EXPECT_EQ(known.bytes, 400u);
  EXPECT_EQ(known.api_ns, 3u * 20 + 10);
  ASSERT_EQ(known.frames.size(), 14u);
  EXPECT_EQ(names.texts[known.frames[0].module], "/usr/lib/libtrainer.so");
  EXPECT_EQ(names.texts[known.frames[0].build_id], "abcd");
  EXPECT_EQ(known.frames[0].address, 0x1234u);
  EXPECT_EQ(names.texts[known.frames[12].module], "/opt/train");
  EXPECT_EQ(known.frames[12].address, 0x401000u);
  EXPECT_EQ(known.frames[13].module, 0u) << "in no module: the address itself";
  EXPECT_EQ(known.frames[13].address, 0x99u);
  EXPECT_EQ(lost.samples, 1u);
  EXPECT_EQ(lost.ops, 2u);
}

TEST(StackTally, ADepthPastTheCapKeepsTheInnermostFrames) {
  StackTally tally;
  tally.addFrames(framesRecord(1, 0, 60000, {1, 2}));
  tally.addFrames(framesRecord(1, 59988, 60000, {3}));  // past the cap: left out
  tally.addSample({.stack = 1, .weight = 1});
  Names names;
  const std::vector<StackComm> rows = tally.finish(std::ref(names)).stacks;
  ASSERT_EQ(rows.size(), 1u);
  ASSERT_EQ(rows[0].frames.size(), 2u) << "zeros (frames never written) are not frames";
  EXPECT_EQ(rows[0].frames[0].address, 1u);
}

// A function of this test, looked up in this test's own file by the address the run would record.
__attribute__((noinline)) int aFunctionToName(int x) { return x * 3 + 1; }

using testutil::ownModule;
using testutil::OwnModule;

TEST(NativeSymbols, AnAddressIsNamedFromItsModulesFile) {
  const OwnModule own = ownModule();
  ASSERT_FALSE(own.path.empty());
  // A return address just past the function's start: the lookup names the byte before it.
  const uint64_t address = reinterpret_cast<uintptr_t>(&aFunctionToName) + 2 - own.load_bias;
  NativeSymbols symbols;
  const NativeSymbols::Symbol symbol = symbols.lookup(own.path, "", address);
  EXPECT_NE(symbol.function.find("aFunctionToName(int)"), std::string::npos) << symbol.function;
  EXPECT_EQ(symbol.file, "stack_tally_test.cc");
  EXPECT_GT(symbol.line, 0);
  EXPECT_TRUE(symbols.unreadable().empty());
}

TEST(NativeSymbols, AnotherBuildOrAMissingFileNamesNothingAndSaysWhy) {
  const OwnModule own = ownModule();
  NativeSymbols symbols;
  EXPECT_TRUE(symbols.lookup(own.path, "00112233445566778899", 0x1000).function.empty());
  EXPECT_TRUE(symbols.lookup("/nonexistent/libgone.so", "", 0x1000).function.empty());
  EXPECT_TRUE(symbols.lookup("/nonexistent/libgone.so", "", 0x2000).function.empty());
  ASSERT_EQ(symbols.unreadable().size(), 2u) << "once a module";
  EXPECT_EQ(symbols.unreadable()[0].second, "the file here is another build than the run's");
  EXPECT_EQ(symbols.unreadable()[1].first, "/nonexistent/libgone.so");
  EXPECT_NE(symbols.unreadable()[1].second.find("cannot read it here"), std::string::npos);
}

}  // namespace
}  // namespace commtrace::report
