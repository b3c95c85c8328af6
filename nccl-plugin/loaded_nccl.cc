#include "nccl-plugin/loaded_nccl.h"

#include <dlfcn.h>

#include <cstring>

namespace commtrace::plugin {
namespace {

using GetVersion = int (*)(int* version);  // ncclResult_t ncclGetVersion(int*)

// A Python extension may have dlopened NCCL RTLD_LOCAL, out of the global scope: then it
// is found by name among the loaded libraries, never loaded by us.
constexpr const char* kLibraries[] = {"libnccl.so.2", "libnccl.so", "librccl.so.1", "librccl.so"};

void* findGetVersion() {
  if (void* fn = dlsym(RTLD_DEFAULT, "ncclGetVersion")) return fn;
  for (const char* soname : kLibraries) {
    void* handle = dlopen(soname, RTLD_LAZY | RTLD_NOLOAD);
    if (handle == nullptr) continue;
    void* fn = dlsym(handle, "ncclGetVersion");
    dlclose(handle);  // drops only the reference RTLD_NOLOAD took
    if (fn != nullptr) return fn;
  }
  return nullptr;
}

}  // namespace

LoadedNccl findLoadedNccl() {
  LoadedNccl out;
  void* fn = findGetVersion();
  if (fn == nullptr) return out;
  int version = 0;
  if (reinterpret_cast<GetVersion>(fn)(&version) != 0 || version < 0) return out;
  out.version = version;
  Dl_info info;
  if (dladdr(fn, &info) != 0 && info.dli_fname != nullptr) {
    const char* name = std::strrchr(info.dli_fname, '/');
    out.is_rccl = std::strstr(name != nullptr ? name : info.dli_fname, "rccl") != nullptr;
  }
  return out;
}

}  // namespace commtrace::plugin
