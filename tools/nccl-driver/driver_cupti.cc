// The driver's libcupti (libcommtrace-driver-cupti.so, which the ranks' COMMTRACE_CUPTI_LIB
// names): the subscriber and Activity API entry points the CUPTI face uses, with the
// activity the driver's timeline says ran (driver_cupti.h) instead of a GPU's. Records are laid
// out in the client's buffers as CUPTI 13 lays them out (CUpti_ActivityKernel10, Memcpy6),
// so the face's decoding is tested on real layouts. Deliveries happen on the calling thread.
//
// FAKE_CUPTI_HOLDER=<name>  subscribe fails as when <name> (Nsight Systems, Kineto) holds CUPTI.
// FAKE_CUPTI_CLOCK_OFFSET_NS=<n>  cuptiGetTimestamp reads n later than it would.
#include "tools/nccl-driver/driver_cupti.h"

#include <cupti.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace {

struct Buffer {
  uint8_t* data = nullptr;
  size_t size = 0;
  size_t used = 0;
};

struct FakeCupti {
  std::mutex mutex;
  bool subscribed = false;
  std::string holder = std::getenv("FAKE_CUPTI_HOLDER") != nullptr ? std::getenv("FAKE_CUPTI_HOLDER") : "";
  CUpti_BuffersCallbackRequestFunc request = nullptr;
  CUpti_BuffersCallbackCompleteFunc complete = nullptr;
  std::set<int> enabled;
  Buffer current;
  std::vector<Buffer> full;  // held until the next flush
  bool hold_full = false;
  size_t dropped_since_asked = 0;
  uint64_t dropped_total = 0;
  std::set<std::string> names;  // CUPTI owns kernel names for the process's life
};

FakeCupti& fake() {
  static auto* f = new FakeCupti();
  return *f;
}

size_t recordSize(const CUpti_Activity* a) {
  switch (a->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
    default: return sizeof(CUpti_Activity);
  }
}

// Both with the mutex held. Completion callbacks run with it released: a client may call
// back into CUPTI from them.
void completeLocked(std::unique_lock<std::mutex>& lock, Buffer b) {
  auto complete = fake().complete;
  lock.unlock();
  if (complete != nullptr) complete(nullptr, 0, b.data, b.size, b.used);
  lock.lock();
}

template <class Record>
void append(const Record& r) {
  FakeCupti& f = fake();
  std::unique_lock lock(f.mutex);
  if (f.enabled.count(r.kind) == 0 || f.request == nullptr) return;
  if (f.current.data != nullptr && f.current.used + sizeof r > f.current.size) {
    Buffer filled = f.current;
    f.current = {};
    if (f.hold_full) f.full.push_back(filled);
    else completeLocked(lock, filled);
  }
  if (f.current.data == nullptr) {
    size_t max_records = 0;
    f.request(&f.current.data, &f.current.size, &max_records);
    f.current.used = 0;
    if (f.current.data == nullptr || f.current.size < sizeof r) {
      f.current = {};
      ++f.dropped_since_asked;
      ++f.dropped_total;
      return;
    }
  }
  std::memcpy(f.current.data + f.current.used, &r, sizeof r);
  f.current.used += sizeof r;
}

uint64_t realtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000 + uint64_t(ts.tv_nsec);
}

// Where a paced driver rank put CUPTI's clock (fakeCuptiPace): read lock-free, as
// cuptiGetTimestamp is called from the face's clock sampler while the player runs.
struct Pace {
  std::atomic<uint64_t> realtime_origin_ns{0};
  std::atomic<uint64_t> cupti_origin_ns{0};
  std::atomic<double> real_per_cupti{0};
};

Pace& pace() {
  static Pace p;
  return p;
}

uint64_t cuptiNow() {
  const Pace& p = pace();
  const double scale = p.real_per_cupti.load(std::memory_order_acquire);
  const uint64_t now = realtimeNs();
  if (scale <= 0) return now;
  const double since = static_cast<double>(now) - static_cast<double>(p.realtime_origin_ns.load(std::memory_order_relaxed));
  return p.cupti_origin_ns.load(std::memory_order_relaxed) + static_cast<uint64_t>(std::max(0.0, since / scale));
}

}  // namespace

extern "C" {

CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc, void*,
                              CUpti_SubscriberParams* params) {
  FakeCupti& f = fake();
  std::lock_guard lock(f.mutex);
  if (f.subscribed || !f.holder.empty()) {
    const std::string holder = f.subscribed ? "CUPTI for an earlier subscriber" : f.holder;
    if (params != nullptr && params->oldSubscriberName != nullptr && params->oldSubscriberSize > 0) {
      std::strncpy(params->oldSubscriberName, holder.c_str(), params->oldSubscriberSize - 1);
    }
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  }
  f.subscribed = true;
  *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(&f);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback, void* userdata) {
  return cuptiSubscribe_v2(subscriber, callback, userdata, nullptr);
}

CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle) {
  std::lock_guard lock(fake().mutex);
  fake().subscribed = false;
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                           CUpti_BuffersCallbackCompleteFunc complete) {
  std::lock_guard lock(fake().mutex);
  fake().request = request;
  fake().complete = complete;
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) {
  std::lock_guard lock(fake().mutex);
  fake().enabled.insert(kind);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind) {
  std::lock_guard lock(fake().mutex);
  fake().enabled.erase(kind);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
  uint8_t* next = *record == nullptr ? buffer : reinterpret_cast<uint8_t*>(*record) + recordSize(*record);
  if (next + sizeof(CUpti_Activity) > buffer + valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = reinterpret_cast<CUpti_Activity*>(next);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) {
  std::lock_guard lock(fake().mutex);
  *dropped = fake().dropped_since_asked;
  fake().dropped_since_asked = 0;
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityFlushAll(uint32_t) {
  FakeCupti& f = fake();
  std::unique_lock lock(f.mutex);
  std::vector<Buffer> ready = std::move(f.full);
  f.full.clear();
  if (f.current.data != nullptr) ready.push_back(f.current);
  f.current = {};
  for (const Buffer& b : ready) completeLocked(lock, b);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiGetTimestamp(uint64_t* timestamp) {
  const char* offset = std::getenv("FAKE_CUPTI_CLOCK_OFFSET_NS");
  *timestamp = cuptiNow() + (offset != nullptr ? std::strtoull(offset, nullptr, 10) : 0);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiGetResultString(CUptiResult result, const char** text) {
  *text = result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ? "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"
                                                                   : "CUPTI_ERROR_UNKNOWN";
  return CUPTI_SUCCESS;
}

void fakeCuptiKernel(const char* name, uint64_t start_ns, uint64_t end_ns, uint32_t device, uint32_t stream,
                     uint32_t correlation) {
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = start_ns;
  k.end = end_ns;
  k.deviceId = device;
  k.contextId = 1;
  k.streamId = stream;
  k.gridX = k.gridY = k.gridZ = 1;
  k.blockX = 256;
  k.blockY = k.blockZ = 1;
  k.correlationId = correlation;
  {
    std::lock_guard lock(fake().mutex);
    k.name = fake().names.insert(name).first->c_str();
  }
  append(k);
}

void fakeCuptiMemcpy(uint64_t bytes, uint8_t copy_kind, uint64_t start_ns, uint64_t end_ns, uint32_t device,
                     uint32_t stream) {
  CUpti_ActivityMemcpy6 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.copyKind = copy_kind;
  m.bytes = bytes;
  m.start = start_ns;
  m.end = end_ns;
  m.deviceId = device;
  m.contextId = 1;
  m.streamId = stream;
  append(m);
}

void fakeCuptiSetHolder(const char* holder) {
  std::lock_guard lock(fake().mutex);
  fake().holder = holder != nullptr ? holder : "";
}

void fakeCuptiHoldFullBuffers(int hold) {
  std::lock_guard lock(fake().mutex);
  fake().hold_full = hold != 0;
}

uint64_t fakeCuptiDroppedTotal() {
  std::lock_guard lock(fake().mutex);
  return fake().dropped_total;
}

void fakeCuptiPace(uint64_t cupti_origin_ns, double real_per_cupti) {
  Pace& p = pace();
  p.realtime_origin_ns.store(realtimeNs(), std::memory_order_relaxed);
  p.cupti_origin_ns.store(cupti_origin_ns, std::memory_order_relaxed);
  p.real_per_cupti.store(real_per_cupti, std::memory_order_release);
}

void fakeCuptiReset() {
  fakeCuptiPace(0, 0);
  std::lock_guard lock(fake().mutex);
  FakeCupti& f = fake();
  f.subscribed = false;
  f.holder.clear();
  f.request = nullptr;
  f.complete = nullptr;
  f.enabled.clear();
  f.current = {};
  f.full.clear();
  f.hold_full = false;
  f.dropped_since_asked = 0;
  f.dropped_total = 0;
}

}  // extern "C"
