// What NCCL's src/plugin/profiler.cc does around the plugin, for one simulated process:
// load the library at the first communicator's init (a failed load is sticky), count the
// communicators holding it and dlclose it after the last one finalizes (a later
// communicator loads it again), own the one activation-mask int every init gets, and
// provide the ncclDebugLogger the plugin logs through.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "tools/nccl-driver/plugin_binding.h"

namespace commtrace::driver {

struct HostOptions {
  std::optional<std::string> plugin;  // NCCL_PROFILER_PLUGIN; nullopt when unset
  int forced_version = 0;             // 4..7: only ncclProfiler_v<N>; 0: newest exported
  bool verbose = false;               // print INFO lines (NCCL_DEBUG=INFO); WARN lines always print
  std::string log_prefix = "commtrace-nccl-driver";
  // What ncclGetVersion answers while this host runs: an NCCL version code (2.31.2 is
  // 23102), 0 for "no such function" (it fails), -1 for the release that binds the forced
  // version (the newest, 2.31, when none is forced).
  int nccl_version = -1;
  bool v6_descriptors_as_v7 = false;  // see PluginLibrary::open
};

// The NCCL version code a release binding ncclProfiler_v<version> has (0: the newest).
int ncclVersionBinding(int version);

// One communicator's hold on the profiler.
struct CommProfile {
  void* context = nullptr;
  bool profiled = false;      // init succeeded: events of this comm go to the plugin
  bool holds_library = false;
};

class ProfilerHost {
 public:
  explicit ProfilerHost(HostOptions options);
  ~ProfilerHost();
  ProfilerHost(const ProfilerHost&) = delete;
  ProfilerHost& operator=(const ProfilerHost&) = delete;

  // ncclProfilerPluginInit. A non-zero init result is logged ("Profiler init failed ...
  // Continue without profiler") and leaves the comm unprofiled.
  CommProfile initComm(uint64_t comm_id, const char* comm_name, int n_nodes, int n_ranks, int rank);
  // ncclProfilerPluginFinalize: finalize, then dlclose if this was the last holder.
  void finalizeComm(CommProfile& comm);

  // The bound table; nullptr while no library is loaded. Stable while any comm holds it.
  const ProfilerApi* api() const { return library_ ? &library_->api() : nullptr; }
  // The process-global mask, read as NCCL does (relaxed atomic load).
  int mask() const;
  int* maskPointer() { return &mask_; }

  PluginLibrary::Status status() const { return status_; }
  const std::string& loadMessage() const { return load_message_; }
  int loads() const { return loads_; }  // successful opens so far (reloads included)
  int boundVersion() const { return bound_version_; }
  const std::string& boundName() const { return bound_name_; }

 private:
  bool acquireLibrary();
  void releaseLibrary();

  HostOptions options_;
  std::mutex mutex_;  // NCCL's profilerMutex
  std::unique_ptr<PluginLibrary> library_;
  int holders_ = 0;
  bool load_failed_ = false;
  PluginLibrary::Status status_ = PluginLibrary::Status::kFailed;
  std::string load_message_;
  int loads_ = 0;
  int bound_version_ = 0;
  std::string bound_name_;
  alignas(64) int mask_ = 0;  // ncclProfilerEventMask
};

// The ncclDebugLogger_t handed to init: printf-style, one line per call on stderr with the
// host's prefix; INFO and TRACE only when a host asked for verbose output.
void ncclStyleLog(int level, unsigned long flags, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 5, 6)));

}  // namespace commtrace::driver
