// Which function of the program issued the communication: every rank's sampled native call
// stacks (load/stack_tally.h), their frames named offline (load/native_symbols.h) and merged
// across ranks by the names, so that one call site on every rank is one row whatever the
// ranks' load addresses.
#pragma once

#include <string>
#include <vector>

#include "tools/report/analyses/call_stacks_rows.h"
#include "tools/report/load/native_symbols.h"
#include "tools/report/load/run_model.h"

namespace commtrace::report {

// Most estimated ops first; empty when no rank sampled a stack.
std::vector<CallStackRow> commByCallStack(const RunModel& run, NativeSymbols& symbols);

// Why Python functions are missing from the stacks: one line per interpreter whose processes
// ran without a perf map (ProcessTimeline::python_without_perf_map).
std::vector<std::string> pythonFrameNotes(const RunModel& run);

// A stack's frames, outermost first (CallStackRow::stack split at ';').
std::vector<std::string_view> framesOf(std::string_view stack);

// A frame for people: its function without namespaces' "(anonymous namespace)::" and without
// its parameters, then its line: "trainStep (train.cc:33)".
std::string shortFrame(std::string_view frame);
// The n frames that called a stack's innermost, innermost first, each as shortFrame but
// without its line, joined by " < ", "< ..." where more are left out: "trainStep < main < ...".
std::string callersOf(std::string_view stack, size_t n);

// How one frame reads: "function (file:line)", "function", "module+0xADDR" or "0xADDR".
std::string frameText(const NativeSymbols::Symbol& symbol, std::string_view module, uint64_t address);

}  // namespace commtrace::report
