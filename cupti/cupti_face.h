// The CUPTI face: the GPU's own timeline (kernels, memcpys, memsets) as KernelActivity
// records, and CUPTI's clock in every ClockSample so the reader can place them
// (docs/architecture.md, "The CUPTI face").
//
// Attached lazily, at the process's first sign of using its GPU (core/gpu_use.h): CUPTI is
// looked up then, never linked. Only one tool can hold CUPTI at a time (CUDA <= 13.2): when
// Nsight Systems, torch.profiler or anyone else holds it, the face says so once and stays
// off; NCCL ops are recorded as ever. CUPTI's worker thread hands filled buffers to a
// callback that copies each record into that thread's ring and returns the buffer to a
// fixed pool; all slower work (flushing CUPTI, sampling windows, drop counts) happens on
// the flusher's thread.
#pragma once

#include <cstdint>

#include "cupti/cupti_api.h"

namespace commtrace::cupti {

// The gpu-in-use hook: loads CUPTI as COMMTRACE_CUPTI and COMMTRACE_CUPTI_LIB say and attaches.
void attachFromSettings();

// Attaches through api (tests pass an in-process fake). mode is a CuptiMode; false (and
// one "commtrace:" line from rank 0) when CUPTI is held or refuses.
bool attach(const CuptiApi& api, uint32_t mode, const char* library);

// The flusher's hooks (FlusherOptions::before_drain, cupti_clock): hands over CUPTI's
// buffers about once a second (every buffer, also incomplete ones, when last), opens and
// closes sampling windows, reports CUPTI's drops; CUPTI's clock now, 0 when detached.
void beforeDrain(bool last);
uint64_t clockNow();

// Sampled mode: whether a moment since_attach_ns after attaching falls in a window (the
// first window_s of every period_s).
bool inSamplingWindow(uint64_t since_attach_ns, uint32_t window_s, uint32_t period_s);

struct FaceStats {
  bool attached = false;
  uint64_t records = 0;         // copied into the rings
  uint64_t dropped = 0;         // CUPTI's own drops, plus buffers it asked for when all were out
  uint64_t windows_opened = 0;  // sampled mode: windows in which kinds were enabled
};
FaceStats faceStats();

// Tests: disables the kinds, unsubscribes and forgets the attachment.
void detachForTest();

}  // namespace commtrace::cupti
