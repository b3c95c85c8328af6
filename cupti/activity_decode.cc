#include "cupti/activity_decode.h"

#include <atomic>
#include <cstddef>
#include <cstring>
#include <string_view>
#include <iterator>

#include "core/string_table.h"

namespace commtrace::cupti {
namespace {

// CUPTI 12.x delivers Kernel9/Memcpy5/Memset4, CUPTI 13 Kernel10/Memcpy6/Memset4: the face
// reads the newest layout, so every field it reads must sit where the older one has it.
#define CT_SAME_OFFSET(A, B, field) static_assert(offsetof(A, field) == offsetof(B, field), #field)
#define CT_KERNEL_FIELDS(A, B)                                                                          \
  CT_SAME_OFFSET(A, B, start); CT_SAME_OFFSET(A, B, end); CT_SAME_OFFSET(A, B, deviceId);             \
  CT_SAME_OFFSET(A, B, contextId); CT_SAME_OFFSET(A, B, streamId); CT_SAME_OFFSET(A, B, gridX);       \
  CT_SAME_OFFSET(A, B, gridY); CT_SAME_OFFSET(A, B, gridZ); CT_SAME_OFFSET(A, B, blockX);             \
  CT_SAME_OFFSET(A, B, blockY); CT_SAME_OFFSET(A, B, blockZ); CT_SAME_OFFSET(A, B, correlationId);    \
  CT_SAME_OFFSET(A, B, name)
#define CT_COPY_FIELDS(A, B)                                                                            \
  CT_SAME_OFFSET(A, B, start); CT_SAME_OFFSET(A, B, end); CT_SAME_OFFSET(A, B, bytes);                \
  CT_SAME_OFFSET(A, B, deviceId); CT_SAME_OFFSET(A, B, contextId); CT_SAME_OFFSET(A, B, streamId);    \
  CT_SAME_OFFSET(A, B, correlationId)
CT_KERNEL_FIELDS(CUpti_ActivityKernel10, CUpti_ActivityKernel9);
CT_KERNEL_FIELDS(CUpti_ActivityKernel10, CUpti_ActivityKernel8);
CT_COPY_FIELDS(CUpti_ActivityMemcpy6, CUpti_ActivityMemcpy5);
CT_SAME_OFFSET(CUpti_ActivityMemcpy6, CUpti_ActivityMemcpy5, copyKind);
CT_COPY_FIELDS(CUpti_ActivityMemset4, CUpti_ActivityMemset3);
#undef CT_KERNEL_FIELDS
#undef CT_COPY_FIELDS
#undef CT_SAME_OFFSET

// Memcpys are named as Nsight Systems names them, by direction (CUpti_ActivityMemcpyKind).
StringId memcpyName(uint8_t copy_kind) {
  static constexpr const char* kNames[] = {"Memcpy",      "Memcpy HtoD", "Memcpy DtoH", "Memcpy HtoA",
                                           "Memcpy AtoH", "Memcpy AtoA", "Memcpy AtoD", "Memcpy DtoA",
                                           "Memcpy DtoD", "Memcpy HtoH", "Memcpy PtoP"};
  static constinit std::atomic<StringId> ids[std::size(kNames)] = {};
  const size_t i = copy_kind < std::size(kNames) ? copy_kind : 0;
  return internOnce(ids[i], kNames[i]);
}

uint32_t product(uint32_t x, uint32_t y, uint32_t z) { return x * y * z; }

template <class Copy>
void decodeCopy(const Copy& c, uint8_t activity, StringId name, KernelActivityRecord& out) {
  out = KernelActivityRecord{.start_ns = c.start,
                             .end_ns = c.end,
                             .bytes = c.bytes,
                             .name = name,
                             .correlation_id = c.correlationId,
                             .stream_id = c.streamId,
                             .context_id = c.contextId,
                             .device = c.deviceId,
                             .grid_size = 0,
                             .block_size = 0,
                             .activity = activity};
}

}  // namespace

StringId KernelNameCache::intern(const char* name) {
  if (name == nullptr) return 0;
  Entry& e = entries_[(reinterpret_cast<uintptr_t>(name) >> 3) % kEntries];
  if (e.name == name) {
    if (e.checked_in_buffer == buffer_) return e.id;
    const std::string_view text = StringTable::global().lookup(e.id);
    if (std::memcmp(text.data(), name, text.size()) == 0 && name[text.size()] == '\0') {
      e.checked_in_buffer = buffer_;
      return e.id;
    }
  }
  e = {name, StringTable::global().intern(name), buffer_};
  return e.id;
}

bool decodeActivity(const CUpti_Activity& activity, KernelActivityRecord& out, KernelNameCache* names) {
  static constinit std::atomic<StringId> memset_name{0};
  switch (activity.kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto& k = reinterpret_cast<const CUpti_ActivityKernel10&>(activity);
      out = KernelActivityRecord{.start_ns = k.start,
                                 .end_ns = k.end,
                                 .bytes = 0,
                                 .name = names != nullptr ? names->intern(k.name) : StringTable::global().intern(k.name),
                                 .correlation_id = k.correlationId,
                                 .stream_id = k.streamId,
                                 .context_id = k.contextId,
                                 .device = k.deviceId,
                                 .grid_size = product(uint32_t(k.gridX), uint32_t(k.gridY), uint32_t(k.gridZ)),
                                 .block_size = product(uint32_t(k.blockX), uint32_t(k.blockY), uint32_t(k.blockZ)),
                                 .activity = kKernel};
      return true;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto& c = reinterpret_cast<const CUpti_ActivityMemcpy6&>(activity);
      decodeCopy(c, kMemcpy, memcpyName(c.copyKind), out);
      return true;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET:
      decodeCopy(reinterpret_cast<const CUpti_ActivityMemset4&>(activity), kMemset, internOnce(memset_name, "Memset"), out);
      return true;
    default: return false;
  }
}

}  // namespace commtrace::cupti
