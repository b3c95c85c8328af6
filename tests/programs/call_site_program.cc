// A training loop whose NCCL calls come from distinct functions, as a C++ trainer's do:
// syncGradients (an AllReduce), gatherParameters (an AllGather of each of two layers, by
// one call site), and on a thread of its own saveCheckpoint (a Broadcast). `steps` steps
// (argv[1], default 5); with argv[2] "fork", the process forks after the first step and the
// child goes on through the same loop, from the same call sites, while the parent waits. Linked against the fake libnccl.so.2; the test reads, under
// LD_PRELOAD=libcommtrace.so, which function the report names for each op.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <thread>

#include "interpose/nccl_api.h"
#include "tests/programs/nccl_wrappers_scenario.h"

namespace {

using namespace commtrace::nccl_api;

float g_buffer[1 << 16];

// noinline: each is a frame of its own, as a real program's functions of any size are; and
// each checks NCCL's answer, as real code does (a call in tail position would leave no frame
// of its caller: the report names the function the call returns to).
__attribute__((noinline)) void syncGradients(CommHandle comm) {
  if (ncclAllReduce(g_buffer, g_buffer, 1 << 16, DataType::kFloat32, 0, comm, nullptr) != kSuccess) std::abort();
}

__attribute__((noinline)) void gatherParameters(CommHandle comm, int layer) {
  if (ncclAllGather(g_buffer, g_buffer, 1024u << layer, DataType::kFloat32, comm, nullptr) != kSuccess) std::abort();
}

int g_steps_done = 0;

__attribute__((noinline)) void trainStep(CommHandle comm) {
  for (int layer = 0; layer < 2; ++layer) gatherParameters(comm, layer);
  syncGradients(comm);
  ++g_steps_done;
}

__attribute__((noinline)) void saveCheckpoint(CommHandle comm) {
  if (ncclBroadcast(g_buffer, g_buffer, 4096, DataType::kFloat32, 0, comm, nullptr) != kSuccess) std::abort();
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 5;
  CommHandle comm = nullptr;
  if (ncclCommInitRank(&comm, 1, commtrace::testing::uniqueIdOf("call-sites"), 0) != kSuccess) return 1;
  const bool fork_child = argc > 2 && std::string_view(argv[2]) == "fork";
  for (int n = 0; n < steps; ++n) {
    trainStep(comm);
    if (n != 0 || !fork_child) continue;
    const pid_t child = fork();
    if (child == 0) continue;  // the child: the rest of the loop, then on as the parent does
    int status = 0;
    if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 5;
  }
  std::thread([comm] { saveCheckpoint(comm); }).join();
  ncclCommDestroy(comm);
  std::printf("done\n");
  return 0;
}
