#include "cupti/cupti_face.h"

#include <dlfcn.h>
#include <pthread.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <new>
#include <string>

#include "core/clock.h"
#include "core/process_identity.h"
#include "core/settings.h"
#include "cupti/activity_buffers.h"
#include "cupti/activity_decode.h"
#include "ringbuffer/ringbuffer.h"

namespace commtrace::cupti {
namespace {

constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                         CUPTI_ACTIVITY_KIND_MEMSET};
// CUPTI hands over only full buffers on its own; a flush at this period bounds how late a
// kernel reaches the file.
constexpr uint64_t kFlushEveryNs = 500'000'000;
static_assert(ActivityBuffers::kRingRecords >= ActivityBuffers::kBuffers * (ActivityBuffers::kBufferBytes / sizeof(CUpti_ActivityKernel10)),
              "a delivering thread's ring takes the whole pool");

// Written once by attach() before g_attached is set; read after it is seen set.
CuptiApi g_api;
CUpti_SubscriberHandle g_subscriber = nullptr;
uint32_t g_mode = kCuptiOff;
uint64_t g_attached_ns = 0;
std::atomic<bool> g_attached{false};
ActivityBuffers g_buffers;

std::atomic<uint64_t> g_records{0};
std::atomic<uint64_t> g_dropped{0};
std::atomic<uint64_t> g_windows{0};

// Flusher-thread state.
bool g_kinds_enabled = false;
uint64_t g_last_flush_ns = 0;
uint64_t g_reported_dropped = 0;

// The callbacks CUPTI names "subscriber callback": the face enables no callback domain,
// it subscribes only to hold CUPTI (and to learn who holds it otherwise).
void CUPTIAPI ignoreCallback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

void CUPTIAPI bufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *max_records = 0;  // as many as fit
  *buffer = g_buffers.take();
  *size = *buffer != nullptr ? ActivityBuffers::kBufferBytes : 0;  // 0: CUPTI drops and counts
}

// The delivering thread's kernel-name cache: allocated at its first delivery and freed when
// the thread exits (a pthread key: the pointer sits in TLS because 8 KB would not fit the
// static TLS a dlopened library may take).
constinit thread_local KernelNameCache* tl_names __attribute__((tls_model("initial-exec"))) = nullptr;
pthread_key_t g_names_key;
std::once_flag g_names_key_made;

void freeNames(void* names) {
  delete static_cast<KernelNameCache*>(names);
  tl_names = nullptr;
}

// CUPTI's worker thread, or whichever thread flushes: its first record gets a ring that takes
// the whole pool, and a name cache.
void ensureDeliveryRing() {
  if (RingRegistry::currentThreadRing() == nullptr) RingRegistry::global().registerCurrentThread(ActivityBuffers::kRingRecords);
  if (tl_names != nullptr) return;
  std::call_once(g_names_key_made, [] { pthread_key_create(&g_names_key, &freeNames); });
  tl_names = new (std::nothrow) KernelNameCache();
  if (tl_names != nullptr) pthread_setspecific(g_names_key, tl_names);
}

void CUPTIAPI bufferCompleted(CUcontext context, uint32_t stream, uint8_t* buffer, size_t, size_t valid) {
  ensureDeliveryRing();
  if (tl_names != nullptr) tl_names->newBuffer();
  CUpti_Activity* activity = nullptr;
  uint64_t copied = 0;
  while (g_api.next_record(buffer, valid, &activity) == CUPTI_SUCCESS) {
    KernelActivityRecord r;
    if (decodeActivity(*activity, r, tl_names) && record(r) != PushResult::kDropped) ++copied;
  }
  g_records.fetch_add(copied, std::memory_order_relaxed);
  size_t dropped = 0;
  if (g_api.dropped_records(context, stream, &dropped) == CUPTI_SUCCESS && dropped != 0) {
    g_dropped.fetch_add(dropped, std::memory_order_relaxed);
  }
  g_buffers.give(buffer);
}

// Rank 0 (or a process no launcher numbers) speaks for the job: every rank meets the same CUPTI.
void say(const std::string& line) {
  if (globalRank() <= 0) std::fprintf(stderr, "commtrace: %s\n", line.c_str());
}

// Who holds CUPTI, as the back-off line names it. A tool that subscribed without a name reads
// back as "CUPTI for <not provided>" (PyTorch's profiler did, on an H100 with CUDA 13).
std::string holderWords(const std::string& holder) {
  if (holder.empty() || holder.find("<not provided>") != std::string::npos)
    return "another tool that gave it no name (PyTorch's profiler, for one)";
  return holder;
}

bool subscribe(const CuptiApi& api, std::string& holder, CUptiResult& result) {
  if (api.subscribe_v2 != nullptr) {
    char old_name[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = {};
    CUpti_SubscriberParams params{};
    params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    params.subscriberName = "commtrace";
    params.oldSubscriberName = old_name;
    params.oldSubscriberSize = sizeof old_name;
    result = api.subscribe_v2(&g_subscriber, &ignoreCallback, nullptr, &params);
    holder = old_name;
  } else {
    result = api.subscribe(&g_subscriber, &ignoreCallback, nullptr);
  }
  return result == CUPTI_SUCCESS;
}

bool setKinds(bool enabled) {
  for (CUpti_ActivityKind kind : kKinds) {
    const CUptiResult r = enabled ? g_api.enable(kind) : g_api.disable(kind);
    // Kernels are the point; a CUPTI without memcpy or memset tracing still serves.
    if (r != CUPTI_SUCCESS && kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && enabled) {
      say("CUPTI would not trace kernels (" + resultName(g_api, r) + "); compute timeline off");
      return false;
    }
  }
  g_kinds_enabled = enabled;
  if (enabled) g_windows.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void reportDrops() {
  const uint64_t dropped = g_dropped.load(std::memory_order_relaxed);
  if (dropped == g_reported_dropped) return;
  g_reported_dropped = dropped;
  record(DropSummaryRecord{.ring_full = dropped,
                           .sink_failed = 0,
                           .cpu_ns = nowNs(),
                           .thread = kCuptiDropThread,
                           .dropped_kind = static_cast<uint8_t>(RecordKind::kKernelActivity),
                           .untracked = 0});
}

}  // namespace

bool attach(const CuptiApi& api, uint32_t mode, const char* library) {
  if (mode == kCuptiOff || g_attached.load(std::memory_order_acquire)) return false;
  g_api = api;
  std::string holder;
  CUptiResult result = CUPTI_SUCCESS;
  if (!subscribe(api, holder, result)) {
    if (result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
      say("CUPTI is held by " + holderWords(holder) +
          "; compute timeline off (NCCL ops are still recorded)");
    } else {
      say(std::string("CUPTI (") + library + ") would not start (" + resultName(api, result) + "); compute timeline off");
    }
    return false;
  }
  auto give_up = [] {
    g_api.unsubscribe(g_subscriber);
    g_subscriber = nullptr;
    return false;
  };
  if (!g_buffers.allocate()) {
    say("out of memory for CUPTI's activity buffers; compute timeline off");
    return give_up();
  }
  result = api.register_callbacks(&bufferRequested, &bufferCompleted);
  if (result != CUPTI_SUCCESS) {
    say("CUPTI refused activity buffers (" + resultName(api, result) + "); compute timeline off");
    return give_up();
  }
  g_mode = mode;
  g_attached_ns = nowNs();
  g_last_flush_ns = g_attached_ns;
  if (!setKinds(true)) return give_up();
  g_attached.store(true, std::memory_order_release);
  return true;
}

namespace {

// CUPTI traces what the CUDA driver runs: a process without libcuda loaded (fake or stub
// NCCL, a CPU-only test) has nothing for it, and is left alone without a word.
bool cudaDriverLoaded() {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (driver != nullptr) dlclose(driver);  // drops only the reference NOLOAD took
  return driver != nullptr;
}

}  // namespace

void attachFromSettings() {
  const Settings& s = settings();
  if (s.cupti == kCuptiOff) return;
  // An explicit COMMTRACE_CUPTI_LIB is tried regardless (the NCCL driver's CUPTI has no driver).
  if (s.cupti_lib[0] == '\0' && !cudaDriverLoaded()) return;
  CuptiApi api;
  std::string loaded, why;
  if (!loadCuptiApi(s.cupti_lib, api, loaded, why)) {
    say("no usable libcupti (" + (loaded.empty() ? why : loaded + ": " + why) +
        "); compute timeline off. COMMTRACE_CUPTI_LIB names one; COMMTRACE_CUPTI=off silences this");
    return;
  }
  attach(api, s.cupti, loaded.c_str());
}

void beforeDrain(bool last) {
  if (!g_attached.load(std::memory_order_acquire)) return;
  ensureDeliveryRing();
  const uint64_t now = nowNs();
  bool flush = last || now - g_last_flush_ns >= kFlushEveryNs;
  if (g_mode == kCuptiSampled && !last) {
    const bool wanted = inSamplingWindow(now - g_attached_ns, settings().cupti_window_s, settings().cupti_period_s);
    if (wanted != g_kinds_enabled) {
      setKinds(wanted);
      flush = flush || !wanted;  // a closed window's kernels reach the file now
    }
  }
  if (flush) {
    g_last_flush_ns = now;
    g_api.flush_all(last ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
  }
  reportDrops();
}

bool inSamplingWindow(uint64_t since_attach_ns, uint32_t window_s, uint32_t period_s) {
  constexpr uint64_t kSecond = 1'000'000'000;
  if (period_s == 0 || window_s >= period_s) return true;
  return since_attach_ns % (period_s * kSecond) < window_s * kSecond;
}

uint64_t clockNow() {
  uint64_t t = 0;
  if (!g_attached.load(std::memory_order_acquire) || g_api.timestamp(&t) != CUPTI_SUCCESS) return 0;
  return t;
}

FaceStats faceStats() {
  return FaceStats{.attached = g_attached.load(std::memory_order_acquire),
                   .records = g_records.load(std::memory_order_relaxed),
                   .dropped = g_dropped.load(std::memory_order_relaxed),
                   .windows_opened = g_windows.load(std::memory_order_relaxed)};
}

void detachForTest() {
  if (!g_attached.exchange(false, std::memory_order_acq_rel)) return;
  g_api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  setKinds(false);
  g_api.unsubscribe(g_subscriber);
  g_subscriber = nullptr;
  g_records = 0;
  g_dropped = 0;
  g_windows = 0;
  g_reported_dropped = 0;
}

}  // namespace commtrace::cupti
