#include "cupti/cupti_api.h"

#include <dlfcn.h>

namespace commtrace::cupti {
namespace {

constexpr const char* kSonames[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so"};
constexpr const char* kToolkitFiles[] = {"/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13",
                                         "/usr/local/cuda/lib64/libcupti.so.13",
                                         "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.12",
                                         "/usr/local/cuda/lib64/libcupti.so.12"};

void* openCupti(const char* path, std::string& loaded) {
  if (path != nullptr && path[0] != '\0') {
    loaded = path;
    return dlopen(path, RTLD_NOW | RTLD_LOCAL);
  }
  for (int mode : {RTLD_NOW | RTLD_NOLOAD, RTLD_NOW | RTLD_LOCAL}) {
    for (const char* soname : kSonames) {
      if (void* handle = dlopen(soname, mode)) return loaded = soname, handle;
    }
  }
  for (const char* file : kToolkitFiles) {
    if (void* handle = dlopen(file, RTLD_NOW | RTLD_LOCAL)) return loaded = file, handle;
  }
  return nullptr;
}

template <class Fn>
bool bind(void* handle, const char* name, Fn& out, std::string& why) {
  out = reinterpret_cast<Fn>(dlsym(handle, name));
  if (out == nullptr && why.empty()) why = std::string("it has no ") + name;
  return out != nullptr;
}

}  // namespace

bool loadCuptiApi(const char* path, CuptiApi& api, std::string& loaded, std::string& why) {
  void* handle = openCupti(path, loaded);
  if (handle == nullptr) {
    const char* error = dlerror();
    why = loaded.empty() ? "no libcupti.so.13 or .12 found" : error != nullptr ? error : "dlopen failed";
    return false;
  }
  bool ok = bind(handle, "cuptiSubscribe", api.subscribe, why);
  ok &= bind(handle, "cuptiUnsubscribe", api.unsubscribe, why);
  ok &= bind(handle, "cuptiActivityRegisterCallbacks", api.register_callbacks, why);
  ok &= bind(handle, "cuptiActivityEnable", api.enable, why);
  ok &= bind(handle, "cuptiActivityDisable", api.disable, why);
  ok &= bind(handle, "cuptiActivityGetNextRecord", api.next_record, why);
  ok &= bind(handle, "cuptiActivityGetNumDroppedRecords", api.dropped_records, why);
  ok &= bind(handle, "cuptiActivityFlushAll", api.flush_all, why);
  ok &= bind(handle, "cuptiGetTimestamp", api.timestamp, why);
  ok &= bind(handle, "cuptiGetResultString", api.result_string, why);
  api.subscribe_v2 = reinterpret_cast<decltype(api.subscribe_v2)>(dlsym(handle, "cuptiSubscribe_v2"));
  // Never dlclosed: CUPTI keeps threads and callbacks into us.
  return ok;
}

std::string resultName(const CuptiApi& api, CUptiResult result) {
  const char* name = nullptr;
  if (api.result_string != nullptr && api.result_string(result, &name) == CUPTI_SUCCESS && name != nullptr) return name;
  return "CUPTI error " + std::to_string(static_cast<int>(result));
}

}  // namespace commtrace::cupti
