// A process's sampled native call stacks (StackFramesRecord, StackSampleRecord) and the
// modules their frames lie in (ModuleRecord), tallied as its file is read: per stack, the
// samples and the weighted sums that estimate its ops, bytes and API time. At the end each
// return address becomes (module, address in the module's file), which is the same on every
// rank that ran the same binaries, whatever their load addresses: the analysis merges and
// symbolises those (analyses/call_stacks.h). Memory grows with the program's distinct stacks.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/record.h"
#include "tools/report/load/run_model.h"

namespace commtrace::report {

class StackTally {
 public:
  void addFrames(const StackFramesRecord& r);
  void addSample(const StackSampleRecord& r);
  void addModule(const ModuleRecord& r, std::string_view path, std::string_view build_id);
  // The stacks samples named, one row per stack. A stack whose frames never arrived (a
  // dropped record) has none; an address in no recorded module is named by the perf map at
  // perf_map_path where it has the address (JIT code), else keeps the address itself.
  struct Finished {
    std::vector<StackComm> stacks;
    std::string python_without_perf_map;  // ProcessTimeline's
  };
  Finished finish(const std::function<NameId(std::string_view)>& intern, const std::string& perf_map_path = "") const;

  // Stacks held per process: a program has dozens to thousands; a damaged or hostile file
  // naming more has its further samples left out, as are frames past a stack's depth.
  static constexpr size_t kMaxStacks = 1 << 16;
  static constexpr size_t kMaxDepth = 256;
  static constexpr size_t kMaxJitSymbols = 1 << 20;  // perf map lines read

 private:
  struct Module {
    uint64_t start, end, load_bias;
    std::string path, build_id;
  };
  // One line of a perf map: "START SIZE NAME", hex without 0x.
  struct JitSymbol {
    uint64_t start, end;
    std::string name;
  };
  using JitSymbols = std::vector<JitSymbol>;  // sorted by start
  static JitSymbols readPerfMap(const std::string& path);
  NativeFrame frameOf(uint64_t pc, const JitSymbols& jit, const std::function<NameId(std::string_view)>& intern) const;
  std::string pythonModule() const;

  std::unordered_map<uint32_t, std::vector<uint64_t>> frames_;  // by stack id, innermost first
  std::unordered_map<uint32_t, StackComm> samples_;             // by stack id (frames unset)
  std::vector<Module> modules_;
};

}  // namespace commtrace::report
