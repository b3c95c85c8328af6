// What a test or the NCCL driver tells the fake libcupti (driver_cupti.cc): GPU activity to
// report as if it had run, and how CUPTI should behave. Found with dlsym in the fake loaded
// into the process (the driver), or called directly when linked in (in-process tests).
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {

// Activity that "ran": recorded when its kind is enabled, into the buffer the client gave
// CUPTI; a full buffer goes back through the completion callback at once (or is held until
// the next cuptiActivityFlushAll after fakeCuptiHoldFullBuffers(1)). Times are CUPTI's clock.
void fakeCuptiKernel(const char* name, uint64_t start_ns, uint64_t end_ns, uint32_t device, uint32_t stream,
                     uint32_t correlation);
void fakeCuptiMemcpy(uint64_t bytes, uint8_t copy_kind, uint64_t start_ns, uint64_t end_ns, uint32_t device,
                     uint32_t stream);

// A paced player's clock: cuptiGetTimestamp reads cupti_origin_ns now and advances one
// nanosecond per real_per_cupti real ones from here, as the activity the player reports
// does. 0: CLOCK_REALTIME (unpaced runs).
void fakeCuptiPace(uint64_t cupti_origin_ns, double real_per_cupti);
// The next subscribe fails with CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED naming holder
// (FAKE_CUPTI_HOLDER in the environment does the same). nullptr: nobody holds it.
void fakeCuptiSetHolder(const char* holder);
void fakeCuptiHoldFullBuffers(int hold);
// Records the client's buffers could not take (none was given): what
// cuptiActivityGetNumDroppedRecords reports, cumulative here.
uint64_t fakeCuptiDroppedTotal();
// Back to a fresh process's CUPTI (no subscriber, no callbacks, nothing enabled).
void fakeCuptiReset();

}
