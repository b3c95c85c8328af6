// Native call stacks at the NCCL API, sampled: which function of the program issued an op.
// After an op the wrappers forwarded, on the issuing thread, one op in COMMTRACE_STACKS on
// average (random intervals, so that a step's fixed pattern of ops is not sampled at the
// same op every time) and each thread's first op of a (communicator, op, size class) has its
// caller's return addresses read by the unwinder (libgcc's _Unwind_Backtrace: the frames'
// unwind tables, no allocation; with glibc >= 2.35 no lock either, unless a JIT registered
// unwind tables of its own, which libgcc looks up under its mutex) and written as a
// StackSampleRecord naming an interned stack (StackFramesRecord, written once a process). The
// ops between samples cost a thread-local countdown and a table probe. The recording
// thread writes the loaded modules the frames lie in (ModuleRecord), so that `commtrace
// report` symbolises them offline.
#pragma once

#include <cstdint>
#include <string>

#include "core/string_table.h"

namespace commtrace::interpose {

// Hot path, after every successful op, on its issuing thread: whether its stack is to be
// sampled, as the weight of the sample (the ops it stands for), 0 when not. `comm`, `func`
// and `bytes` key "the first op of".
uint32_t stackSampleDue(const void* comm, int func, uint64_t bytes);

// What a sample says of its op.
struct SampledOp {
  const void* caller;  // the wrapper's return address: the stack starts at its frame
  uint64_t comm_id;    // as the op's records name the communicator
  uint64_t bytes;
  uint64_t cpu_start_ns;
  StringId func;
};

// Cold, when stackSampleDue said so: reads the caller's stack and records the sample.
void takeStackSample(const SampledOp& op, uint32_t weight);

// The recording thread, before each drain: when samples were taken since it last looked,
// records the modules loaded since (all of them the first time), and copies the process's
// perf map (/tmp/perf-PID.map: a JIT's names for its code, CPython's Python functions under
// PYTHONPERFSUPPORT=1) to trace_path + ".perf-map" when it grew: the JIT's code is in no
// module, and the map goes with the process.
void recordSampledModules(const std::string& trace_path);

// The fork child handler: the child's file starts without the parent's stacks and modules.
void forgetStacksAfterFork();

}  // namespace commtrace::interpose
