// The ranks' NVTX ranges (a scenario's "nvtx_step" and its items' "nvtx"), pushed and popped
// on the rank's thread as a training loop does (torch.cuda.nvtx.range_push/range_pop). NVTX
// hands them to its injection library, which the job points at the plugin
// (NVTX_INJECTION64_PATH): the ops issued inside carry their path, as in a real job. Built
// without NVTX's headers, the driver pushes no range.
#pragma once

#include <string>
#include <vector>

namespace commtrace::driver {

// A rank's open ranges: the step's, then the group's.
class NvtxRanges {
 public:
  // Loads NVTX's injection (the plugin's NVTX face) now, as a paced player must before its
  // clock starts: done at the first push, the load (tens of ms on a loaded host) left the
  // first steps to be played at once, to catch up, their ranges microseconds long.
  explicit NvtxRanges(bool enabled);
  ~NvtxRanges();
  // Enters `step` (pop the step range open, push "<name> <step>"); name empty: nothing.
  void enterStep(const std::string& name, int step);
  void pushAll(const std::vector<std::string>& ranges);
  void popAll(const std::vector<std::string>& ranges);

 private:
  const bool enabled_;
  bool step_open_ = false;
};

}  // namespace commtrace::driver
