// Code in no module, as a JIT's (CPython's perf trampolines under PYTHONPERFSUPPORT=1): a
// trampoline copied into an anonymous executable mapping calls the function that calls
// NCCL, and the program names the trampoline in its perf map (/tmp/perf-PID.map) the way
// CPython names a Python function's. x86-64 only (the trampoline's bytes); prints its pid,
// so that the test removes the map after the run (the recorder copies it at the process's
// last drain, after main returns). Linked against the fake libnccl.so.2.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "interpose/nccl_api.h"
#include "tests/programs/nccl_wrappers_scenario.h"

namespace {

using namespace commtrace::nccl_api;

CommHandle g_comm = nullptr;
float g_buffer[256];

__attribute__((noinline)) void issueFromJit() {
  if (ncclAllReduce(g_buffer, g_buffer, 256, DataType::kFloat32, 0, g_comm, nullptr) != kSuccess) std::abort();
}

// sub rsp, 8; call rdi; add rsp, 8; ret: calls its argument, keeping the stack aligned.
constexpr unsigned char kTrampoline[] = {0x48, 0x83, 0xEC, 0x08, 0xFF, 0xD7, 0x48, 0x83, 0xC4, 0x08, 0xC3};

}  // namespace

int main() {
  if (ncclCommInitRank(&g_comm, 1, commtrace::testing::uniqueIdOf("jit"), 0) != kSuccess) return 1;
  void* code = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (code == MAP_FAILED) return 2;
  std::memcpy(code, kTrampoline, sizeof kTrampoline);
  if (mprotect(code, 4096, PROT_READ | PROT_EXEC) != 0) return 3;
  char map[64];
  std::snprintf(map, sizeof map, "/tmp/perf-%d.map", static_cast<int>(getpid()));
  FILE* f = std::fopen(map, "w");
  if (f == nullptr) return 4;
  std::fprintf(f, "%lx %zx py::train_step:/work/train.py\n", reinterpret_cast<unsigned long>(code), sizeof kTrampoline);
  std::fclose(f);
  auto* trampoline = reinterpret_cast<void (*)(void (*)())>(code);
  for (int step = 0; step < 3; ++step) trampoline(&issueFromJit);
  ncclCommDestroy(g_comm);
  std::printf("pid %d\n", static_cast<int>(getpid()));
  return 0;
}
