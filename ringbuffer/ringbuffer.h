// The producer face of the ring buffers: record(x) stores one fixed-size record into the
// calling thread's ring. This is the whole hot path of every face.
//
//   commtrace::record(CollRecord{...});
//
// A thread's first record allocates its ring and registers it with the RingRegistry; after
// that record() is a thread-local load, a ring push and, once per half ring, a doorbell.
#pragma once

#include <cstdint>

#include "core/clock.h"
#include "core/record.h"
#include "core/string_table.h"
#include "ringbuffer/ring_registry.h"
#include "ringbuffer/thread_ring.h"

namespace commtrace {

template <class T>
inline PushResult record(const T& r) {
  ThreadRing* ring = RingRegistry::currentThreadRing();
  if (ring == nullptr) [[unlikely]] {
    ring = RingRegistry::global().registerCurrentThread();
    if (ring == nullptr) {
      RingRegistry::global().countRinglessDrop(KindOf<T>::value);
      return PushResult::kDropped;
    }
  }
  const PushResult result = ring->push(r);
  if (result == PushResult::kStoredHalfFull) [[unlikely]] RingRegistry::global().doorbell().ring();
  return result;
}

}  // namespace commtrace
