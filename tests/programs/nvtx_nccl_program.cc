// A training loop's shape in NVTX ranges around NCCL calls, as PyTorch's FSDP or Megatron
// issue them: three steps "train_step N" of a forward (an AllGather per layer) and a
// backward (a ReduceScatter per layer, then an AllReduce), NCCL's own API range around one
// call (its "NCCL" domain: not a place in the program), a thread of its own issuing under
// its own range, and one AllReduce outside any range. Linked against the fake libnccl.so.2;
// the test reads where each op was issued from the trace under LD_PRELOAD=libcommtrace.so.
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <string>
#include <thread>

#include "interpose/nccl_api.h"
#include "tests/programs/nccl_wrappers_scenario.h"

namespace {

using namespace commtrace::nccl_api;

float g_buffer[1024];

void allGather(CommHandle comm) { ncclAllGather(g_buffer, g_buffer, 256, DataType::kFloat32, comm, nullptr); }
void reduceScatter(CommHandle comm) { ncclReduceScatter(g_buffer, g_buffer, 256, DataType::kFloat32, 0, comm, nullptr); }
void allReduce(CommHandle comm) { ncclAllReduce(g_buffer, g_buffer, 1024, DataType::kFloat32, 0, comm, nullptr); }

void layer(const char* name, CommHandle comm, void (*op)(CommHandle)) {
  nvtxRangePushA(name);
  op(comm);
  nvtxRangePop();
}

void step(int n, CommHandle comm) {
  nvtxRangePushA(("train_step " + std::to_string(n)).c_str());
  nvtxRangePushA("forward");
  layer("layers.0", comm, allGather);
  layer("layers.1", comm, allGather);
  nvtxRangePop();
  nvtxRangePushA("backward");
  layer("layers.1", comm, reduceScatter);
  layer("layers.0", comm, reduceScatter);
  nvtxDomainHandle_t nccl = nvtxDomainCreateA("NCCL");  // NCCL's own range around its call
  nvtxEventAttributes_t a = {};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = "ncclAllReduce";
  nvtxDomainRangePushEx(nccl, &a);
  allReduce(comm);
  nvtxDomainRangePop(nccl);
  nvtxRangePop();
  nvtxRangePop();
}

}  // namespace

int main() {
  CommHandle comm = nullptr;
  if (ncclCommInitRank(&comm, 1, commtrace::testing::uniqueIdOf("nvtx-nccl"), 0) != kSuccess) return 1;
  for (int n = 0; n < 3; ++n) step(n, comm);
  std::thread([comm] {
    nvtxRangePushA("checkpoint");
    allReduce(comm);
    nvtxRangePop();
  }).join();
  allReduce(comm);
  ncclCommDestroy(comm);
  std::printf("done\n");
  return 0;
}
