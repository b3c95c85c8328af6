// One CUPTI activity record as the fixed-size record the rings carry. Runs on the thread
// CUPTI hands a filled buffer to, once per record: no allocation, no lock.
#pragma once

#include <cupti.h>

#include "core/record.h"

namespace commtrace::cupti {

// KernelActivityRecord::activity values.
inline constexpr uint8_t kKernel = 1, kMemcpy = 2, kMemset = 3;

// Kernel names are CUPTI's, "shared across all activity records representing the same
// kernel": one pointer, one name. This direct-mapped cache from pointer to StringId spares
// hashing the name for every record. An entry's first hit in each buffer is checked
// against the table's text, in case CUPTI freed the name (module unload) and reused the
// memory for another; later hits in that buffer trust it, since every record in a buffer
// was written before it was delivered. Names the table truncated always miss.
class KernelNameCache {
 public:
  StringId intern(const char* name);
  // A new buffer is being decoded: every entry is checked again at its first hit.
  void newBuffer() { ++buffer_; }

 private:
  static constexpr size_t kEntries = 512;
  struct Entry {
    const char* name = nullptr;
    StringId id = 0;
    uint32_t checked_in_buffer = 0;
  };
  Entry entries_[kEntries];
  uint32_t buffer_ = 1;
};

// false for the kinds the face does not keep. names: the delivering thread's cache, or
// nullptr to intern every name.
bool decodeActivity(const CUpti_Activity& activity, KernelActivityRecord& out, KernelNameCache* names = nullptr);

}  // namespace commtrace::cupti
