// The CUDA runtime calls that make the CPU wait for the GPU: how long each call blocked,
// on which stream, for which event. Reached only through the dynamic libcudart the program
// links (its PLT or a dlsym by name); calls made inside cuBLAS, NCCL or a static cudart
// never come here (docs/architecture.md, the preload face). Each wrapper forwards
// to the runtime's own definition and returns exactly its result; we never make a CUDA
// call of our own.
#include <atomic>
#include <cstdint>
#include <cstdio>

#include "core/export.h"
#include "core/gpu_use.h"
#include "core/real_symbol.h"
#include "core/settings.h"
#include "ringbuffer/ringbuffer.h"

namespace commtrace::interpose {
namespace {

// Our own declarations of the runtime's types (driver_types.h, CUDA 13.0): results are
// cudaError_t values, streams and events opaque handles.
using CudaResult = int;
using Stream = void*;
using Event = void*;

constexpr CudaResult kSharedObjectSymbolNotFound = 302;  // cudaErrorSharedObjectSymbolNotFound
// cudaStreamPerThread: what a null stream means to the _ptsz entry points (programs built
// with --default-stream per-thread), as opposed to the legacy default stream 0.
constexpr uint64_t kPerThreadDefaultStream = 0x2;

// Runtimes dlopened RTLD_LOCAL (a Python extension's private copy) are outside RTLD_NEXT.
constexpr const char* kCudartSonames[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", nullptr};

// One wrapped entry point: where its real definition is and the interned name its records
// carry, both resolved on the first call.
template <class Fn>
class WrappedCall {
 public:
  explicit constexpr WrappedCall(const char* name) : real_(SymbolSource{name, nullptr, kCudartSonames}) {}

  Fn* real() { return real_.get(); }
  const char* name() const { return real_.name(); }

  StringId nameId() { return internOnce(name_id_, name()); }

  // Once per entry point: a program that calls it with no runtime loaded hears why.
  void reportMissing() {
    if (missing_reported_.exchange(true, std::memory_order_relaxed)) return;
    std::fprintf(stderr,
                 "commtrace: no loaded CUDA runtime defines %s; the call returns "
                 "cudaErrorSharedObjectSymbolNotFound (%d)\n",
                 name(), kSharedObjectSymbolNotFound);
  }

 private:
  RealFunction<Fn> real_;
  std::atomic<StringId> name_id_{0};
  std::atomic<bool> missing_reported_{false};
};

// Set while this thread is inside a wrapper: a runtime (or a shim in front of it) that
// implements one sync call with another through the PLT reaches us again, and recording
// the inner call too would count the same blocked time twice.
constinit thread_local bool tl_inside_wrapper __attribute__((tls_model("initial-exec"))) = false;

// What the record says the call waited on.
struct WaitTarget {
  uint64_t stream;  // 0 for device and event syncs
  uint64_t event;   // 0 where the call takes no event
};

uint64_t handleValue(const void* handle) { return reinterpret_cast<uint64_t>(handle); }
uint64_t perThreadStreamValue(const void* stream) {
  return stream == nullptr ? kPerThreadDefaultStream : handleValue(stream);
}

// Every wrapper: forward, and time the call into one ApiSpanRecord.
template <class Fn, class... Args>
CudaResult forwardTimed(WrappedCall<Fn>& call, WaitTarget target, Args... args) {
  Fn* real = call.real();
  if (real == nullptr) [[unlikely]] {
    call.reportMissing();
    return kSharedObjectSymbolNotFound;
  }
  noteGpuInUse();  // the CUPTI face may attach
  if (!settings().cuda_sync || tl_inside_wrapper) return real(args...);
  tl_inside_wrapper = true;
  const uint64_t start = nowNs();
  const CudaResult result = real(args...);
  const uint64_t end = nowNs();
  tl_inside_wrapper = false;
  record(ApiSpanRecord{.comm_id = 0,
                       .stream = target.stream,
                       .arg = target.event,
                       .cpu_start_ns = start,
                       .cpu_end_ns = end,
                       .name = call.nameId(),
                       .result = result});
  return result;
}

constinit WrappedCall<CudaResult(Stream)> g_stream_synchronize{"cudaStreamSynchronize"};
constinit WrappedCall<CudaResult(Stream)> g_stream_synchronize_ptsz{"cudaStreamSynchronize_ptsz"};
constinit WrappedCall<CudaResult()> g_device_synchronize{"cudaDeviceSynchronize"};
constinit WrappedCall<CudaResult(Event)> g_event_synchronize{"cudaEventSynchronize"};
constinit WrappedCall<CudaResult(Stream, Event, unsigned)> g_stream_wait_event{"cudaStreamWaitEvent"};
constinit WrappedCall<CudaResult(Stream, Event, unsigned)> g_stream_wait_event_ptsz{"cudaStreamWaitEvent_ptsz"};

}  // namespace
}  // namespace commtrace::interpose

using namespace commtrace::interpose;

COMMTRACE_EXPORT CudaResult cudaStreamSynchronize(Stream stream) {
  return forwardTimed(g_stream_synchronize, {handleValue(stream), 0}, stream);
}

COMMTRACE_EXPORT CudaResult cudaStreamSynchronize_ptsz(Stream stream) {
  return forwardTimed(g_stream_synchronize_ptsz, {perThreadStreamValue(stream), 0}, stream);
}

COMMTRACE_EXPORT CudaResult cudaDeviceSynchronize() { return forwardTimed(g_device_synchronize, {0, 0}); }

COMMTRACE_EXPORT CudaResult cudaEventSynchronize(Event event) {
  return forwardTimed(g_event_synchronize, {0, handleValue(event)}, event);
}

// Makes the stream, not the CPU, wait: the span is the enqueue's CPU time; the stream and
// event tie the GPU-side wait to the event's producer.
COMMTRACE_EXPORT CudaResult cudaStreamWaitEvent(Stream stream, Event event, unsigned flags) {
  return forwardTimed(g_stream_wait_event, {handleValue(stream), handleValue(event)}, stream, event, flags);
}

COMMTRACE_EXPORT CudaResult cudaStreamWaitEvent_ptsz(Stream stream, Event event, unsigned flags) {
  return forwardTimed(g_stream_wait_event_ptsz, {perThreadStreamValue(stream), handleValue(event)}, stream, event,
                      flags);
}
