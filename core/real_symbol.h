// The definition a wrapper forwards to: the next one after libcommtrace.so in the
// process's lookup order, resolved on the first call and cached. One mechanism for every
// wrapped library (NCCL, the CUDA runtime, libc).
#pragma once

#include <atomic>

namespace commtrace {

struct SymbolSource {
  const char* name;   // "ncclAllReduce"
  const char* alias;  // NCCL's strong twin "pncclAllReduce" (its ncclX are weak), or nullptr
  // Libraries to look in when they are loaded but outside our lookup scope (dlopened
  // RTLD_LOCAL by a Python extension): found with RTLD_NOLOAD, never loaded by us.
  // nullptr-terminated, or nullptr.
  const char* const* sonames;
};

// Cold path: dlsym(RTLD_NEXT, name), then the alias, then each loaded soname. nullptr if
// none has it.
void* resolveNext(const SymbolSource& source);

template <class Fn>
class RealFunction {
 public:
  explicit constexpr RealFunction(SymbolSource source) : source_(source) {}

  // One acquire load once resolved. nullptr while no loaded library defines it: the
  // wrapper then answers with the library's own "not available" error.
  Fn* get() {
    void* fn = fn_.load(std::memory_order_acquire);
    if (fn == nullptr) [[unlikely]] {
      fn = resolveNext(source_);
      fn_.store(fn, std::memory_order_release);
    }
    return reinterpret_cast<Fn*>(fn);
  }

  const char* name() const { return source_.name; }

 private:
  SymbolSource source_;
  std::atomic<void*> fn_{nullptr};
};

}  // namespace commtrace
