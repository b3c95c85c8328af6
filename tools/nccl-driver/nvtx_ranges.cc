#include "tools/nccl-driver/nvtx_ranges.h"

#ifdef CT_DRIVER_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace commtrace::driver {
namespace {

#ifdef CT_DRIVER_NVTX
void initialize() { nvtxInitialize(nullptr); }
void push(const std::string& name) { nvtxRangePushA(name.c_str()); }
void pop() { nvtxRangePop(); }
#else
void initialize() {}
void push(const std::string&) {}
void pop() {}
#endif

}  // namespace

NvtxRanges::NvtxRanges(bool enabled) : enabled_(enabled) {
  if (enabled_) initialize();
}

NvtxRanges::~NvtxRanges() {
  if (step_open_) pop();
}

void NvtxRanges::enterStep(const std::string& name, int step) {
  if (!enabled_ || name.empty()) return;
  if (step_open_) pop();
  push(name + " " + std::to_string(step));
  step_open_ = true;
}

void NvtxRanges::pushAll(const std::vector<std::string>& ranges) {
  if (!enabled_) return;
  for (const std::string& r : ranges) push(r);
}

void NvtxRanges::popAll(const std::vector<std::string>& ranges) {
  if (!enabled_) return;
  for (size_t i = 0; i < ranges.size(); ++i) pop();
}

}  // namespace commtrace::driver
