// NCCL's side of the profiler-plugin ABI: opening the plugin library the way NCCL 2.26+
// does, binding the newest ncclProfiler_vN it exports (or one forced version), and calling
// it through one version-neutral interface, so the rest of the driver never names a
// descriptor version.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "nccl-plugin/profiler_abi.h"

namespace commtrace::driver {

// Everything any descriptor of v4-v7 carries. The bound version copies the fields its
// descriptor has for e.type and ignores the rest.
struct Event {
  nccl::EventType type = nccl::kGroup;
  void* parent = nullptr;
  int rank = 0;  // NCCL fills it for Coll, P2p and Proxy* events only
  // GroupApi
  int group_depth = 0;
  bool graph_captured = false;  // also CollApi, P2pApi
  // CollApi, P2pApi, Coll, P2p
  const char* func = nullptr;
  size_t count = 0;
  const char* datatype = nullptr;
  int root = 0;
  void* stream = nullptr;  // also KernelLaunch
  uint64_t user_tag = 0;   // v7
  // Coll, P2p
  uint64_t seq_number = 0;
  const void* send_buff = nullptr;
  void* recv_buff = nullptr;
  uint8_t n_channels = 0;
  uint8_t n_warps = 0;
  const char* algo = nullptr;
  const char* proto = nullptr;
  void* parent_group = nullptr;  // v5+: the legacy Group handle
  int peer = 0;
  // ProxyOp, ProxyStep, KernelCh
  int32_t pid = 0;
  uint8_t channel_id = 0;
  int n_steps = 0;
  int chunk_size = 0;
  int is_send = 0;
  int step = 0;
  uint64_t p_timer = 0;
};

// One bound ncclProfiler_vN table.
class ProfilerApi {
 public:
  virtual ~ProfilerApi() = default;
  virtual int version() const = 0;
  virtual const char* name() const = 0;
  // Called with the v4 argument order (hash third) or the v5+ one (commId second).
  virtual nccl::Result init(void** context, uint64_t comm_id, int* activation_mask, const char* comm_name, int n_nodes,
                            int n_ranks, int rank, nccl::DebugLogger logger) const = 0;
  // The handle the plugin wrote; nullptr means the plugin does not track the event. The
  // plugin's answer goes to *result when given (NCCL ignores it).
  virtual void* startEvent(void* context, const Event& event, nccl::Result* result = nullptr) const = 0;
  virtual nccl::Result stopEvent(void* handle) const = 0;
  virtual nccl::Result recordEventState(void* handle, nccl::EventState state, nccl::StateArgs* args) const = 0;
  virtual nccl::Result finalize(void* context) const = 0;

  // NCCL 2.27 (v4) has no GroupApi, CollApi, P2pApi or KernelLaunch events.
  bool hasApiEvents() const { return version() >= 5; }
};

// Binds an ncclProfiler_v<version> table found by other means (in-process tests hold the
// plugin's tables themselves); v6_descriptors_as_v7 as in PluginLibrary::open.
std::unique_ptr<ProfilerApi> bindProfiler(int version, const void* table, bool v6_descriptors_as_v7 = false);

// The plugin library, opened as NCCL_PROFILER_PLUGIN says (docs/nccl-profiler.md).
class PluginLibrary {
 public:
  enum class Status { kLoaded, kDisabled, kFailed };
  struct Opened {
    std::unique_ptr<PluginLibrary> library;  // set when kLoaded
    Status status = Status::kFailed;
    std::string message;  // kDisabled/kFailed: why, starting "commtrace:"
  };

  // plugin_env: the NCCL_PROFILER_PLUGIN value, nullptr when unset. forced_version 4..7
  // looks up only ncclProfiler_v<N>; 0 looks up v7, v6, v5, v4 and takes the first found.
  // v6_descriptors_as_v7: a bound v7 table gets v6-sized descriptors, as NCCL builds whose
  // "v7" keeps the v6 descriptor pass them (a plugin that reads past them overreads).
  static Opened open(const char* plugin_env, int forced_version, bool v6_descriptors_as_v7 = false);

  ~PluginLibrary();  // dlclose
  PluginLibrary(const PluginLibrary&) = delete;
  PluginLibrary& operator=(const PluginLibrary&) = delete;

  const ProfilerApi& api() const { return *api_; }
  // What was dlopened: a path or soname, or "STATIC_PLUGIN" for dlopen(NULL).
  const std::string& openedAs() const { return opened_as_; }
  void* dlHandle() const { return handle_; }

 private:
  PluginLibrary(void* handle, std::string opened_as, std::unique_ptr<ProfilerApi> api);
  void* handle_;
  std::string opened_as_;
  std::unique_ptr<ProfilerApi> api_;
};

}  // namespace commtrace::driver
