// The process model: a launcher that starts one process per rank with a torchrun-like
// environment and waits for them, and the rank process that plays its rank.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "tools/nccl-driver/timing_model.h"

namespace commtrace::driver {

// Whose environment each rank gets: the variables that launcher sets for its workers.
enum class Launcher { kTorchrun, kSlurm, kOpenMpi, kMpich, kNone };

// The job names the simulated Slurm and Open MPI launchers give (torchrun's is
// "commtrace-<scenario>"; MPICH's Hydra and a plain process name none).
inline constexpr const char* kSlurmJobId = "4242";
inline constexpr const char* kOpenMpiNamespace = "prterun-commtrace-4242@1";

struct LaunchOptions {
  std::string self;           // the driver executable, started again for each rank
  std::string scenario_path;  // handed to the ranks
  std::optional<std::string> plugin;  // --plugin: the ranks' NCCL_PROFILER_PLUGIN
  std::string out_dir;        // ground-truth.json; the ranks' COMMTRACE_DIR unless set
  std::string cupti;          // the driver's libcupti: the ranks' COMMTRACE_CUPTI_LIB unless set ("": none)
  int forced_version = 0;
  std::vector<int> ranks;     // empty: all
  bool preload = false;       // LD_PRELOAD the plugin, NCCL_PROFILER_PLUGIN=STATIC_PLUGIN
  double time_scale = 0;
  bool verbose = false;
  bool quick_exit = false;    // --exit _exit: each rank ends with _exit right after its last finalize
  Launcher launcher = Launcher::kTorchrun;
  int nccl_version = -1;              // HostOptions::nccl_version
  bool v6_descriptors_as_v7 = false;  // HostOptions::v6_descriptors_as_v7
};

// Writes the ground truth, starts the ranks and waits for every one. Returns 0 when all
// exited 0, else 1 after naming each rank that failed and how.
int launchJob(const Scenario& scenario, const Timeline& timeline, const LaunchOptions& options, std::ostream& out,
              std::ostream& err);

struct RankProcessOptions {
  int forced_version = 0;
  double time_scale = 0;
  bool verbose = false;
  int nccl_version = -1;
  bool v6_descriptors_as_v7 = false;
};

// The rank process for `rank` (the launcher passes it on the command line, whatever
// variables the launcher kind sets); $NCCL_PROFILER_PLUGIN names the plugin, as under NCCL.
// Returns 0 when the rank was played with a plugin bound (or NCCL_PROFILER_PLUGIN=none).
int runRankProcess(const Scenario& scenario, const Timeline& timeline, int rank, const RankProcessOptions& options,
                   std::ostream& out, std::ostream& err);

}  // namespace commtrace::driver
