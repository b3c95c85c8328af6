// A stand-in libnccl.so.2 for testing the preload face's wrappers without a GPU. It exports
// the public entry points the wrappers cover the way NCCL does (a weak ncclX aliasing a
// strong pncclX), keeps communicators as plain structs and succeeds at everything, so a
// program linked against it runs its collectives through libcommtrace.so's wrappers.
//
// FAKE_NCCL_RESULT=<n> makes every collective, p2p and group call return n instead of
// ncclSuccess (what a wrapper must hand back unchanged).
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace {

using Result = int;  // ncclResult_t
constexpr Result kSuccess = 0, kInvalidArgument = 4;

struct FakeComm {
  int n_ranks;
  int rank;
  int device;
};

Result opResult() {
  const char* forced = std::getenv("FAKE_NCCL_RESULT");
  return forced != nullptr ? std::atoi(forced) : kSuccess;
}

Result newComm(void** comm, int n_ranks, int rank, int device) {
  if (comm == nullptr || n_ranks <= 0 || rank < 0 || rank >= n_ranks) return kInvalidArgument;
  *comm = new FakeComm{n_ranks, rank, device};
  return kSuccess;
}

FakeComm* fake(void* comm) { return static_cast<FakeComm*>(comm); }

}  // namespace

#define FAKE_NCCL_ALIAS(name) __attribute__((weak, alias("p" #name)))

extern "C" {

Result pncclGetVersion(int* version) {
  *version = 22809;
  return kSuccess;
}
Result ncclGetVersion(int*) FAKE_NCCL_ALIAS(ncclGetVersion);

Result pncclGetUniqueId(void* id) {
  std::memset(id, 0x5a, 128);
  return kSuccess;
}
Result ncclGetUniqueId(void*) FAKE_NCCL_ALIAS(ncclGetUniqueId);

const char* pncclGetErrorString(Result result) { return result == kSuccess ? "no error" : "fake error"; }
const char* ncclGetErrorString(Result) FAKE_NCCL_ALIAS(ncclGetErrorString);

Result pncclCommInitRank(void** comm, int n_ranks, const void* /*id*/, int rank) {
  return newComm(comm, n_ranks, rank, 0);
}
Result ncclCommInitRank(void**, int, const void*, int) FAKE_NCCL_ALIAS(ncclCommInitRank);

Result pncclCommInitRankConfig(void** comm, int n_ranks, const void* /*id*/, int rank, void* /*config*/) {
  return newComm(comm, n_ranks, rank, 0);
}
Result ncclCommInitRankConfig(void**, int, const void*, int, void*) FAKE_NCCL_ALIAS(ncclCommInitRankConfig);

Result pncclCommInitAll(void** comms, int n_devices, const int* devices) {
  for (int d = 0; d < n_devices; ++d) newComm(&comms[d], n_devices, d, devices != nullptr ? devices[d] : d);
  return kSuccess;
}
Result ncclCommInitAll(void**, int, const int*) FAKE_NCCL_ALIAS(ncclCommInitAll);

Result pncclCommSplit(void* comm, int color, int key, void** new_comm, void* /*config*/) {
  if (color < 0) {  // NCCL_SPLIT_NOCOLOR
    *new_comm = nullptr;
    return kSuccess;
  }
  return newComm(new_comm, fake(comm)->n_ranks, key % fake(comm)->n_ranks, fake(comm)->device);
}
Result ncclCommSplit(void*, int, int, void**, void*) FAKE_NCCL_ALIAS(ncclCommSplit);

Result pncclCommDestroy(void* comm) {
  delete fake(comm);
  return kSuccess;
}
Result ncclCommDestroy(void*) FAKE_NCCL_ALIAS(ncclCommDestroy);

Result pncclCommAbort(void* comm) { return pncclCommDestroy(comm); }
Result ncclCommAbort(void*) FAKE_NCCL_ALIAS(ncclCommAbort);

Result pncclCommFinalize(void*) { return kSuccess; }
Result ncclCommFinalize(void*) FAKE_NCCL_ALIAS(ncclCommFinalize);

Result pncclCommCount(const void* comm, int* count) {
  *count = static_cast<const FakeComm*>(comm)->n_ranks;
  return kSuccess;
}
Result ncclCommCount(const void*, int*) FAKE_NCCL_ALIAS(ncclCommCount);

Result pncclCommUserRank(const void* comm, int* rank) {
  *rank = static_cast<const FakeComm*>(comm)->rank;
  return kSuccess;
}
Result ncclCommUserRank(const void*, int*) FAKE_NCCL_ALIAS(ncclCommUserRank);

Result pncclCommCuDevice(const void* comm, int* device) {
  *device = static_cast<const FakeComm*>(comm)->device;
  return kSuccess;
}
Result ncclCommCuDevice(const void*, int*) FAKE_NCCL_ALIAS(ncclCommCuDevice);

Result pncclAllReduce(const void*, void*, size_t, int, int, void*, void*) { return opResult(); }
Result ncclAllReduce(const void*, void*, size_t, int, int, void*, void*) FAKE_NCCL_ALIAS(ncclAllReduce);

Result pncclBroadcast(const void*, void*, size_t, int, int, void*, void*) { return opResult(); }
Result ncclBroadcast(const void*, void*, size_t, int, int, void*, void*) FAKE_NCCL_ALIAS(ncclBroadcast);

Result pncclReduce(const void*, void*, size_t, int, int, int, void*, void*) { return opResult(); }
Result ncclReduce(const void*, void*, size_t, int, int, int, void*, void*) FAKE_NCCL_ALIAS(ncclReduce);

Result pncclAllGather(const void*, void*, size_t, int, void*, void*) { return opResult(); }
Result ncclAllGather(const void*, void*, size_t, int, void*, void*) FAKE_NCCL_ALIAS(ncclAllGather);

Result pncclReduceScatter(const void*, void*, size_t, int, int, void*, void*) { return opResult(); }
Result ncclReduceScatter(const void*, void*, size_t, int, int, void*, void*) FAKE_NCCL_ALIAS(ncclReduceScatter);

Result pncclSend(const void*, size_t, int, int, void*, void*) { return opResult(); }
Result ncclSend(const void*, size_t, int, int, void*, void*) FAKE_NCCL_ALIAS(ncclSend);

Result pncclRecv(void*, size_t, int, int, void*, void*) { return opResult(); }
Result ncclRecv(void*, size_t, int, int, void*, void*) FAKE_NCCL_ALIAS(ncclRecv);

Result pncclGroupStart() { return opResult(); }
Result ncclGroupStart() FAKE_NCCL_ALIAS(ncclGroupStart);

Result pncclGroupEnd() { return opResult(); }
Result ncclGroupEnd() FAKE_NCCL_ALIAS(ncclGroupEnd);

}  // extern "C"
