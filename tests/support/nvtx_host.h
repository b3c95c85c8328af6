// NVTX's side of the injection interface, in process: the core and domain module tables
// (one slot per callback id, each a function pointer the tool overwrites) and the export
// table InitializeInjectionNvtx2 asks for them. Tests and benchmarks inject libcommtrace's
// NVTX face here once and call its handlers through the slots, as NVTX would.
#pragma once

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

extern "C" int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t);

namespace commtrace::testutil {

class NvtxHost {
 public:
  // The one host of this process, injected on first use; nullptr if the tool refused.
  static NvtxHost* injected() {
    static NvtxHost host;
    static const bool ok = InitializeInjectionNvtx2(&exportTable) == 1;
    return ok ? &host : nullptr;
  }

  template <class F>
  F core(int id) const { return reinterpret_cast<F>(core_slots_[id]); }
  template <class F>
  F domain(int id) const { return reinterpret_cast<F>(core2_slots_[id]); }

 private:
  NvtxHost() {
    for (int i = 0; i < NVTX_CBID_CORE_SIZE; ++i) core_table_[i] = &core_slots_[i];
    for (int i = 0; i < NVTX_CBID_CORE2_SIZE; ++i) core2_table_[i] = &core2_slots_[i];
    instance_ = this;
  }

  static int getModule(NvtxCallbackModule module, NvtxFunctionTable* table, unsigned int* size) {
    if (module == NVTX_CB_MODULE_CORE) return *table = instance_->core_table_, *size = NVTX_CBID_CORE_SIZE, 1;
    if (module == NVTX_CB_MODULE_CORE2) return *table = instance_->core2_table_, *size = NVTX_CBID_CORE2_SIZE, 1;
    return 0;
  }
  static const void* exportTable(uint32_t id) {
    static const NvtxExportTableCallbacks callbacks{sizeof(NvtxExportTableCallbacks), &getModule};
    return id == NVTX_ETID_CALLBACKS ? &callbacks : nullptr;
  }

  static inline NvtxHost* instance_ = nullptr;
  NvtxFunctionPointer core_slots_[NVTX_CBID_CORE_SIZE] = {};
  NvtxFunctionPointer* core_table_[NVTX_CBID_CORE_SIZE] = {};
  NvtxFunctionPointer core2_slots_[NVTX_CBID_CORE2_SIZE] = {};
  NvtxFunctionPointer* core2_table_[NVTX_CBID_CORE2_SIZE] = {};
};

}  // namespace commtrace::testutil
