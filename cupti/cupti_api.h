// The CUPTI entry points the face uses, as a table of pointers: filled by dlsym from the
// libcupti the process already has (never linked: libcommtrace.so stays free of CUDA
// libraries), or by a test with an in-process fake. Types come from the toolkit's CUPTI
// headers; the face only reads fields every record version since CUDA 11 has at the same
// offsets (activity_decode.cc checks them).
#pragma once

#include <cupti.h>

#include <string>

namespace commtrace::cupti {

struct CuptiApi {
  CUptiResult (*subscribe)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*) = nullptr;
  // CUDA 13.0+: also names the tool already holding CUPTI. nullptr on older CUPTI.
  CUptiResult (*subscribe_v2)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*, CUpti_SubscriberParams*) = nullptr;
  CUptiResult (*unsubscribe)(CUpti_SubscriberHandle) = nullptr;
  CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc) = nullptr;
  CUptiResult (*enable)(CUpti_ActivityKind) = nullptr;
  CUptiResult (*disable)(CUpti_ActivityKind) = nullptr;
  CUptiResult (*next_record)(uint8_t*, size_t, CUpti_Activity**) = nullptr;
  CUptiResult (*dropped_records)(CUcontext, uint32_t, size_t*) = nullptr;
  CUptiResult (*flush_all)(uint32_t) = nullptr;
  CUptiResult (*timestamp)(uint64_t*) = nullptr;
  CUptiResult (*result_string)(CUptiResult, const char**) = nullptr;
};

// Finds libcupti and fills api from it. `path` non-empty: exactly that file. Else the copy
// the process has loaded already (a second copy of CUPTI in one process is undefined
// behaviour), else libcupti.so.13/.12 from the loader's path, else the CUDA toolkit's.
// false with `why` set when there is none or it lacks an entry point; `loaded` names the
// file used.
bool loadCuptiApi(const char* path, CuptiApi& api, std::string& loaded, std::string& why);

// CUPTI's name for a result ("CUPTI_ERROR_NOT_INITIALIZED"), or its number.
std::string resultName(const CuptiApi& api, CUptiResult result);

}  // namespace commtrace::cupti
