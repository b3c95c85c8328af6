#include "libcommtrace/capture_api.h"

#include <cstdio>
#include <memory>
#include <mutex>
#include <new>

#include "core/clock.h"
#include "core/export.h"
#include "core/process_identity.h"
#include "core/run_directory.h"
#include "core/settings.h"
#include "interpose/process_life.h"
#include "interpose/stack_sampler.h"
#include "libcommtrace/live_link.h"
#include "nccl-plugin/in_flight_report.h"
#include "ringbuffer/ring_registry.h"
#include "sink/flusher.h"
#if COMMTRACE_CUPTI_FACE
#include "cupti/cupti_face.h"
#endif

namespace {

// Never destroyed: commtrace_stop() may run from an atexit handler after static destructors.
commtrace::Flusher* g_flusher = nullptr;
std::mutex g_mutex;  // start/stop are rare calls, never on a hot path

// The faces' slow work, on the flusher thread before each drain: CUPTI's buffers handed over,
// the modules of newly sampled call stacks recorded (the last drain included: a sample taken
// just before the end names frames too), the ops NCCL has had in flight for long reported,
// the live link keyed once it can be (at
// the last drain the process is ending: what it still has in flight is not a hang, and a
// stopped collector it started must not outlive it).
void beforeDrain(bool last, const std::string& trace_path) {
#if COMMTRACE_CUPTI_FACE
  commtrace::cupti::beforeDrain(last);
#endif
  commtrace::interpose::recordSampledModules(trace_path);
  if (last) {
    commtrace::library::endLiveLink();
    return;
  }
  const uint64_t now = commtrace::nowNs();
  commtrace::plugin::reportOpsInFlight(now);
  commtrace::library::tendLiveLink(now);
}

}  // namespace

namespace commtrace::library {

void abandonRecorderInForkedChild() {
  new (&g_mutex) std::mutex();
  g_flusher = nullptr;
  forgetLiveLinkAfterFork();
  interpose::forgetStacksAfterFork();
}

}  // namespace commtrace::library

COMMTRACE_EXPORT int commtrace_start(const char* dir) {
  using commtrace::settings;
  commtrace::loadSettings();
  std::lock_guard lock(g_mutex);
  if (g_flusher != nullptr) return -1;
  try {
    commtrace::FlusherOptions options;
    options.identity = commtrace::processIdentity();
    options.flush_period_ms = settings().flush_period_ms;
    options.dir = dir != nullptr ? dir : commtrace::runDirectory(settings(), options.identity);
    options.before_drain = &beforeDrain;
    options.digest = commtrace::library::openLiveLink(options.dir);
    options.prom_dir = settings().prom_dir;
    options.exit_unseen = !commtrace::interpose::seesExit();
#if COMMTRACE_CUPTI_FACE
    options.cupti_clock = &commtrace::cupti::clockNow;
#endif
    auto flusher = std::make_unique<commtrace::Flusher>(options);
    if (!flusher->start()) return -1;
    g_flusher = flusher.release();
  } catch (const std::exception& e) {  // bad_alloc, or what a thread or mutex could not have
    std::fprintf(stderr, "commtrace: cannot start the recorder (%s); this process is not recorded\n", e.what());
    commtrace::RingRegistry::global().refuseRings();
    return -1;
  }
  commtrace::interpose::recordingStarted();
  return 0;
}

COMMTRACE_EXPORT void commtrace_stop(void) {
  using commtrace::settings;
  std::lock_guard lock(g_mutex);
  if (g_flusher == nullptr) return;
  if (g_flusher->stop(settings().exit_flush_ms)) {
    delete g_flusher;
  } else {  // its thread still holds it
    std::fprintf(stderr, "commtrace: the last write did not finish within COMMTRACE_EXIT_FLUSH_MS=%u ms; "
                 "the end of %s may be missing\n", settings().exit_flush_ms, g_flusher->path().c_str());
  }
  g_flusher = nullptr;
  commtrace::interpose::recordingStopped();
}

COMMTRACE_EXPORT const char* commtrace_version(void) {
  return COMMTRACE_VERSION;
}
