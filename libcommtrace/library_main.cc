// What happens when libcommtrace.so enters and leaves a process, whichever way it came
// (LD_PRELOAD, NCCL's dlopen of its profiler plugin, or a program linking it).
//
// Preloaded, the library lands in every process of a job (launcher, workers, every shell
// and compiler they start), so the constructor stays passive: it reads the settings, points
// NCCL and NVTX at this library, names the job, registers the fork handler. No thread, no
// file, no CUDA call: recording starts with the process's first record, CUPTI with its
// first sign of using the GPU.
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "core/process_identity.h"
#include "core/real_symbol.h"
#include "core/settings.h"
#include "interpose/process_life.h"
#include "libcommtrace/capture_api.h"
#include "ringbuffer/ring_registry.h"

#ifndef COMMTRACE_NVTX_FACE
#define COMMTRACE_NVTX_FACE 0  // built without NVTX3's headers: no InitializeInjectionNvtx2
#endif
#if COMMTRACE_CUPTI_FACE
#include "core/gpu_use.h"
#include "cupti/cupti_face.h"
#endif

namespace {

// A variable through which a library the program loads later finds us. Set to our own
// absolute path only when unset and only when preloaded (children inherit it, so only the
// first process of a job says so, in one line); a value someone else set is left alone,
// and said so by a process that records (shells and compilers stay quiet).
struct SelfPointer {
  const char* name;
  const char* when_left;  // what a value found there means
  bool (*wanted)();       // whether this build and the settings want the face behind it
};

constexpr SelfPointer kNcclProfilerPlugin{"NCCL_PROFILER_PLUGIN", "NCCL loads the profiler it names", [] { return true; }};
constexpr SelfPointer kNvtxInjection{"NVTX_INJECTION64_PATH", "NVTX ranges go to the tool it names, not to commtrace",
                                     [] { return COMMTRACE_NVTX_FACE != 0 && commtrace::settings().nvtx; }};
constexpr const SelfPointer* kSelfPointers[] = {&kNcclProfilerPlugin, &kNvtxInjection};

bool g_preloaded = false;
const char* g_loaded_name = nullptr;  // this library's file as the loader opened it
char g_self_path[PATH_MAX] = {};      // its real path, resolved on first need

const char* selfPath() {
  if (g_self_path[0] != '\0') return g_self_path;
  char resolved[PATH_MAX];
  if (g_loaded_name == nullptr || realpath(g_loaded_name, resolved) == nullptr) return nullptr;
  std::memcpy(g_self_path, resolved, sizeof g_self_path);
  return g_self_path;
}

std::string_view fileName(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// LD_PRELOAD names this library (entries are separated by spaces or colons).
bool namedInPreload(const char* loaded_name) {
  const char* preload = std::getenv("LD_PRELOAD");
  if (preload == nullptr) return false;
  const std::string_view self = fileName(loaded_name);
  std::string_view rest = preload;
  while (!rest.empty()) {
    const size_t end = std::min(rest.find_first_of(": "), rest.size());
    if (end > 0 && fileName(rest.substr(0, end)) == self) return true;
    rest.remove_prefix(std::min(end + 1, rest.size()));
  }
  return false;
}

// setenv as libc has it, found past the program. A program may define its own: bash's,
// called before its main, files the variable in bash's own table, after which bash's getenv
// no longer sees the inherited environment. libc's writes environ, which bash imports (and
// exports to its children) when its main starts.
constinit commtrace::RealFunction<int(const char*, const char*, int)> g_libc_setenv{
    {"setenv", nullptr, nullptr}};

void exportVariable(const char* name, const char* value) {
  if (auto* libc_setenv = g_libc_setenv.get()) libc_setenv(name, value, 0);
}

// Sets every wanted variable that is unset, and says so in one line.
void pointAtThisLibrary() {
  const char* self = selfPath();
  if (self == nullptr) return;
  char names[128] = {};
  for (const SelfPointer* variable : kSelfPointers) {
    if (!variable->wanted() || std::getenv(variable->name) != nullptr) continue;
    exportVariable(variable->name, self);
    if (names[0] != '\0') std::strncat(names, " and ", sizeof names - std::strlen(names) - 1);
    std::strncat(names, variable->name, sizeof names - std::strlen(names) - 1);
  }
  if (names[0] != '\0') std::fprintf(stderr, "commtrace: set %s to %s\n", names, self);
}

void sayWhichVariablesWereLeft() {
  const char* self = selfPath();
  for (const SelfPointer* variable : kSelfPointers) {
    if (!variable->wanted()) continue;
    const char* value = std::getenv(variable->name);
    if (value == nullptr || (self != nullptr && std::strcmp(value, self) == 0)) continue;
    std::fprintf(stderr, "commtrace: left %s=%s as found: %s\n", variable->name, value, variable->when_left);
  }
}

// The first-ring hook: recording (the flusher thread and the trace file) starts with the
// process's first record, so the many processes of a job that never touch NCCL get no
// thread and no file.
void startRecording() {
  if (commtrace_start(nullptr) == 0 && g_preloaded) sayWhichVariablesWereLeft();
}

__attribute__((constructor)) void onLoad() {
  commtrace::loadSettings();
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&onLoad), &info) != 0 && info.dli_fname != nullptr) {
    g_loaded_name = info.dli_fname;
    // Only a preloaded constructor runs before main, on the process's one thread, where
    // setenv cannot race another thread's getenv; dlopened by NCCL, we change nothing.
    g_preloaded = namedInPreload(info.dli_fname);
  }
  if (g_preloaded) pointAtThisLibrary();
  const char* job_id = commtrace::nameJobIfUnnamed();
  if (job_id != nullptr && g_preloaded) exportVariable("COMMTRACE_JOB_ID", job_id);
  commtrace::interpose::prepareProcessLife(g_preloaded, &commtrace::library::abandonRecorderInForkedChild);
  commtrace::RingRegistry::global().setRingMemoryLimit(uint64_t{commtrace::settings().ring_memory_mb} << 20);
  commtrace::RingRegistry::global().setFirstRingHook(&startRecording);
#if COMMTRACE_CUPTI_FACE
  commtrace::setGpuInUseHook(&commtrace::cupti::attachFromSettings);
#endif
}

// Linked -z nodelete, so this runs at process exit, not at NCCL's dlclose: the last
// records of the process reach the file.
__attribute__((destructor)) void onExit() { commtrace_stop(); }

}  // namespace
