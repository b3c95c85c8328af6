// The CUPTI entry points linked into this binary (the NCCL driver's libcupti, compiled in)
// as the CUPTI face's function table, for in-process tests and benchmarks.
#pragma once

#include "cupti/cupti_api.h"

namespace commtrace::testutil {

inline cupti::CuptiApi linkedCuptiApi() {
  cupti::CuptiApi api;
  api.subscribe = &cuptiSubscribe;
  api.subscribe_v2 = &cuptiSubscribe_v2;
  api.unsubscribe = &cuptiUnsubscribe;
  api.register_callbacks = &cuptiActivityRegisterCallbacks;
  api.enable = &cuptiActivityEnable;
  api.disable = &cuptiActivityDisable;
  api.next_record = &cuptiActivityGetNextRecord;
  api.dropped_records = &cuptiActivityGetNumDroppedRecords;
  api.flush_all = &cuptiActivityFlushAll;
  api.timestamp = &cuptiGetTimestamp;
  api.result_string = &cuptiGetResultString;
  return api;
}

}  // namespace commtrace::testutil
