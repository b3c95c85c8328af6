// The program cuda_wrappers_test runs under LD_PRELOAD=libcommtrace.so. It calls each CUDA
// runtime entry point libcommtrace.so wraps, the whole sequence REPEAT times, and prints
// "NAME RESULT" per call.
//
//   cuda_sync_caller REPEAT             linked against libcudart.so.13, as a CUDA program is
//   cuda_sync_caller_dlsym REPEAT MODE  not linked: MODE "global" or "local" dlopens
//                                       libcudart.so.13 that way first, "none" does not; the
//                                       entry points are then found with dlsym(RTLD_DEFAULT)
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "tests/programs/cuda_sync_caller.h"

using namespace commtrace::testing::cuda_sync_caller;

namespace {

using CudaResult = int;  // cudaError_t

struct CudaSyncApi {
  CudaResult (*stream_synchronize)(void*);
  CudaResult (*stream_synchronize_ptsz)(void*);
  CudaResult (*device_synchronize)();
  CudaResult (*event_synchronize)(void*);
  CudaResult (*stream_wait_event)(void*, void*, unsigned);
  CudaResult (*stream_wait_event_ptsz)(void*, void*, unsigned);
};

void* handle(uintptr_t value) { return reinterpret_cast<void*>(value); }

void show(const char* name, CudaResult result) { std::printf("%s %d\n", name, result); }

// The order cuda_wrappers_test expects its records in.
void callEach(const CudaSyncApi& api) {
  show("cudaStreamSynchronize", api.stream_synchronize(handle(kStreamA)));
  show("cudaStreamSynchronize", api.stream_synchronize(handle(kStreamB)));
  show("cudaStreamSynchronize", api.stream_synchronize(nullptr));
  show("cudaStreamSynchronize_ptsz", api.stream_synchronize_ptsz(handle(kStreamA)));
  show("cudaStreamSynchronize_ptsz", api.stream_synchronize_ptsz(nullptr));
  show("cudaDeviceSynchronize", api.device_synchronize());
  show("cudaEventSynchronize", api.event_synchronize(handle(kEventA)));
  show("cudaStreamWaitEvent", api.stream_wait_event(handle(kStreamB), handle(kEventA), 0));
  show("cudaStreamWaitEvent_ptsz", api.stream_wait_event_ptsz(nullptr, handle(kEventB), 1));
}

#ifdef CUDA_SYNC_CALLER_DLSYM
template <class Fn>
bool find(Fn*& fn, const char* name) {
  fn = reinterpret_cast<Fn*>(dlsym(RTLD_DEFAULT, name));
  if (fn == nullptr) std::fprintf(stderr, "cuda_sync_caller: no definition of %s\n", name);
  return fn != nullptr;
}

bool loadApi(const char* mode, CudaSyncApi& api) {
  const bool global = std::strcmp(mode, "global") == 0, local = std::strcmp(mode, "local") == 0;
  if ((global || local) && dlopen("libcudart.so.13", RTLD_NOW | (global ? RTLD_GLOBAL : RTLD_LOCAL)) == nullptr) {
    std::fprintf(stderr, "cuda_sync_caller: %s\n", dlerror());
    return false;
  }
  return find(api.stream_synchronize, "cudaStreamSynchronize") &&
         find(api.stream_synchronize_ptsz, "cudaStreamSynchronize_ptsz") &&
         find(api.device_synchronize, "cudaDeviceSynchronize") &&
         find(api.event_synchronize, "cudaEventSynchronize") &&
         find(api.stream_wait_event, "cudaStreamWaitEvent") &&
         find(api.stream_wait_event_ptsz, "cudaStreamWaitEvent_ptsz");
}
#else
extern "C" {
CudaResult cudaStreamSynchronize(void* stream);
CudaResult cudaStreamSynchronize_ptsz(void* stream);
CudaResult cudaDeviceSynchronize();
CudaResult cudaEventSynchronize(void* event);
CudaResult cudaStreamWaitEvent(void* stream, void* event, unsigned flags);
CudaResult cudaStreamWaitEvent_ptsz(void* stream, void* event, unsigned flags);
}

bool loadApi(const char*, CudaSyncApi& api) {
  api = {cudaStreamSynchronize, cudaStreamSynchronize_ptsz, cudaDeviceSynchronize,
         cudaEventSynchronize,  cudaStreamWaitEvent,        cudaStreamWaitEvent_ptsz};
  return true;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s REPEAT [global|local|none]\n", argv[0]);
    return 2;
  }
  CudaSyncApi api{};
  if (!loadApi(argc > 2 ? argv[2] : "", api)) return 3;
  for (int i = std::atoi(argv[1]); i > 0; --i) callEach(api);
  return 0;
}
