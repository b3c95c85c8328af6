// What a Python program's C extension does, for ctypes to load: calls NCCL (the fake
// libnccl.so.2) on a one-rank communicator made at the first call.
#include <cstdlib>

#include "interpose/nccl_api.h"
#include "tests/programs/nccl_wrappers_scenario.h"

using namespace commtrace::nccl_api;

extern "C" __attribute__((visibility("default"))) int allReduceOnce() {
  static CommHandle comm = nullptr;
  static float buffer[256];
  if (comm == nullptr && ncclCommInitRank(&comm, 1, commtrace::testing::uniqueIdOf("python"), 0) != kSuccess) return 1;
  return ncclAllReduce(buffer, buffer, 256, DataType::kFloat32, 0, comm, nullptr) == kSuccess ? 0 : 2;
}
