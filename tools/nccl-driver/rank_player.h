// Plays one rank of the timeline against the profiler plugin, with NCCL 2.28's event
// hierarchy and threads (NCCL 2.27's for a v4 plugin):
//   user thread:   GroupApi -> 23 -> CollApi/P2pApi start/stop ... -> 24 -> per communicator:
//                  KernelLaunch, Group -> Coll/P2p start ... stop -> Group stop -> GroupApi stop
//   host-callback: the Group/Coll/P2p part of graph-captured groups
//   proxy thread:  per Coll/P2p, in GPU completion order: KernelCh (pTimers) per channel,
//                  ProxyOp/ProxyStep for network peers, now and then a ProxyCtrl
//   and, to the driver's CUPTI, the compute and NCCL kernels the GPU ran (GpuActivity)
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <vector>

#include "tools/nccl-driver/gpu_activity.h"
#include "tools/nccl-driver/profiler_host.h"
#include "tools/nccl-driver/serial_executor.h"
#include "tools/nccl-driver/timing_model.h"

namespace commtrace::driver {

struct PlayOptions {
  // Real seconds per simulated second; 0 runs flat out (the GPU pTimers carry the model).
  double time_scale = 0;
};

struct PlayStats {
  uint64_t groups = 0;
  uint64_t calls = 0;
  uint64_t coll_events = 0;      // Coll startEvent calls
  uint64_t p2p_events = 0;       // P2p startEvent calls
  uint64_t kernel_ch_events = 0;
  uint64_t proxy_op_events = 0;
  uint64_t proxy_step_events = 0;
};

class RankPlayer {
 public:
  RankPlayer(const Scenario& scenario, const Timeline& timeline, int rank, ProfilerHost& host, PlayOptions options = {});
  ~RankPlayer();
  RankPlayer(const RankPlayer&) = delete;
  RankPlayer& operator=(const RankPlayer&) = delete;

  // Creates the rank's communicators, plays every group, drains the threads and finalizes
  // every communicator (which dlcloses the plugin after the last one).
  PlayStats play();

 private:
  struct CommState {
    CommProfile profile;
    int comm_rank = 0;
    uint64_t seq[16] = {};  // comm->seqNumber[func]
  };
  struct Task {
    const RankCall* call;
    void* api_handle;  // CollApi/P2pApi
  };
  struct GpuWork;

  void createComms(int generation);
  void destroyComms();
  void playGroup(const RankGroup& group);
  void launchPlan(const RankGroup& group, const std::vector<Task>& plan, int mask);
  void* startTask(CommState& comm, const Task& task, void* group_handle, int mask, bool profiled, bool captured);
  void postGpuWork(const CommState& comm, const std::vector<Task>& plan, const std::vector<void*>& handles, int mask);
  void runGpuWork(const GpuWork& work);
  void emitProxyOps(const GpuWork& work, int channel);
  void emitProxyCtrl(void* context, int appended) const;
  void paceTo(uint64_t sim_ns) const;
  // The planted kill (Scenario::killed_rank): SIGKILL, after the scenario's pause.
  [[noreturn]] void die() const;
  void* commStream(int comm) const;

  const Scenario& s_;
  const Timeline& t_;
  const int rank_;
  ProfilerHost& host_;
  const PlayOptions options_;
  std::map<int, CommState> comms_;  // by Timeline comm index
  std::chrono::steady_clock::time_point start_;
  uint64_t first_sim_ns_ = 0;
  GpuActivity gpu_;
  PlayStats stats_;  // user/host-callback side
  std::atomic<uint64_t> kernel_ch_{0}, proxy_ops_{0}, proxy_steps_{0}, gpu_works_{0};
  // Declared last: joined first, before anything their jobs use goes away.
  SerialExecutor host_callback_{"nccl hostcb"};
  SerialExecutor proxy_{"nccl proxy"};
};

}  // namespace commtrace::driver
