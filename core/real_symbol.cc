#include "core/real_symbol.h"

#include <dlfcn.h>

namespace commtrace {

void* resolveNext(const SymbolSource& source) {
  if (void* fn = dlsym(RTLD_NEXT, source.name)) return fn;
  if (source.alias != nullptr) {
    if (void* fn = dlsym(RTLD_NEXT, source.alias)) return fn;
  }
  for (const char* const* soname = source.sonames; soname != nullptr && *soname != nullptr; ++soname) {
    void* handle = dlopen(*soname, RTLD_LAZY | RTLD_NOLOAD);
    if (handle == nullptr) continue;
    void* fn = source.alias != nullptr ? dlsym(handle, source.alias) : nullptr;
    if (fn == nullptr) fn = dlsym(handle, source.name);
    dlclose(handle);  // drops only the reference RTLD_NOLOAD took
    if (fn != nullptr) return fn;
  }
  return nullptr;
}

}  // namespace commtrace
