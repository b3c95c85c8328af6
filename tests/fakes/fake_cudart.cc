// A stand-in libcudart.so.13 for testing the preload face's CUDA wrappers without a GPU.
// It exports the synchronisation entry points libcommtrace.so wraps, versioned
// libcudart.so.13 like the real runtime (fake_cudart.map), and pretends to wait.
//
// FAKE_CUDART_SLEEP_US=<n>  every call sleeps n microseconds: the blocked time a wrapper measures.
// FAKE_CUDART_RESULT=<n>    every call returns n instead of cudaSuccess (a wrapper hands it back unchanged).
// FAKE_CUDART_TRACE=1       every call prints "fake_cudart: NAME stream=S event=E flags=F" on stdout,
//                           so a test sees which arguments arrived.
// FAKE_CUDART_NESTED=1      cudaDeviceSynchronize calls cudaStreamSynchronize(0) through the PLT,
//                           as a runtime or shim built on its own entry points would.
#include <time.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace {

using CudaResult = int;  // cudaError_t; 0 is cudaSuccess

long envNumber(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::atol(value) : 0;
}

void sleepMicroseconds(long us) {
  timespec left{us / 1'000'000, (us % 1'000'000) * 1000};
  while (nanosleep(&left, &left) != 0) {
  }
}

CudaResult pretendToWait(const char* call, const void* stream, const void* event, unsigned flags) {
  if (envNumber("FAKE_CUDART_TRACE") != 0) {
    std::printf("fake_cudart: %s stream=%#lx event=%#lx flags=%u\n", call, reinterpret_cast<unsigned long>(stream),
                reinterpret_cast<unsigned long>(event), flags);
    std::fflush(stdout);
  }
  if (const long us = envNumber("FAKE_CUDART_SLEEP_US"); us > 0) sleepMicroseconds(us);
  return static_cast<CudaResult>(envNumber("FAKE_CUDART_RESULT"));
}

}  // namespace

extern "C" {

CudaResult cudaStreamSynchronize(void* stream) { return pretendToWait("cudaStreamSynchronize", stream, nullptr, 0); }

CudaResult cudaStreamSynchronize_ptsz(void* stream) {
  return pretendToWait("cudaStreamSynchronize_ptsz", stream, nullptr, 0);
}

CudaResult cudaDeviceSynchronize() {
  if (envNumber("FAKE_CUDART_NESTED") != 0) cudaStreamSynchronize(nullptr);
  return pretendToWait("cudaDeviceSynchronize", nullptr, nullptr, 0);
}

CudaResult cudaEventSynchronize(void* event) { return pretendToWait("cudaEventSynchronize", nullptr, event, 0); }

CudaResult cudaStreamWaitEvent(void* stream, void* event, unsigned flags) {
  return pretendToWait("cudaStreamWaitEvent", stream, event, flags);
}

CudaResult cudaStreamWaitEvent_ptsz(void* stream, void* event, unsigned flags) {
  return pretendToWait("cudaStreamWaitEvent_ptsz", stream, event, flags);
}

}  // extern "C"
