// commtrace-nccl-driver: plays a simulated multi-rank NCCL job against a profiler plugin,
// one process per rank, loading and calling the plugin the way NCCL does.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <map>

#include "tools/nccl-driver/job.h"

namespace {

std::string selfExecutable() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

// The driver's libcupti, installed beside libcommtrace.so (lib/ next to bin/); "" if absent.
std::string driverCupti(const std::string& self) {
  const std::string dir = self.substr(0, self.rfind('/'));
  const std::string path = dir + "/../lib/libcommtrace-driver-cupti.so";
  char resolved[4096];
  return realpath(path.c_str(), resolved) != nullptr ? std::string(resolved) : std::string();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace commtrace::driver;
  CLI::App app{
      "commtrace-nccl-driver: play a simulated distributed job (scenario file) against an NCCL profiler plugin.\n"
      "Starts one process per rank with torchrun's environment; each loads the plugin as NCCL 2.26+ does and\n"
      "plays NCCL's events (API, Group, Coll/P2p, KernelCh with GPU pTimers, ProxyOp/ProxyStep) from NCCL's\n"
      "threads, and the GPU's compute and NCCL kernels through the driver's own libcupti (the ranks'\n"
      "COMMTRACE_CUPTI_LIB unless set). Writes what it planted to OUT/ground-truth.json."};
  std::string scenario_path, out_dir = "commtrace-run", plugin;
  int version = 0;
  std::vector<int> ranks_only;
  bool preload = false, verbose = false, check = false;
  int rank_process = -1, nccl_version = -1;
  std::string v7_descriptor = "v7";
  std::string launcher = "torchrun";
  std::string exit_mode = "return";
  double time_scale = 0;
  app.add_option("--scenario", scenario_path, "scenario file (JSON; see tools/nccl-driver/README.md)")->required();
  app.add_option("--plugin", plugin,
                 "the ranks' NCCL_PROFILER_PLUGIN: a path, a soname, a name N (then libnccl-profiler-N.so), "
                 "STATIC_PLUGIN or none; overrides an inherited NCCL_PROFILER_PLUGIN. Unset: the inherited value, "
                 "else NCCL's default libnccl-profiler.so");
  app.add_option("--out", out_dir, "directory for ground-truth.json; also the ranks' COMMTRACE_DIR unless that is set")
      ->capture_default_str();
  app.add_option("--profiler-version", version,
                 "look up only ncclProfiler_v<N>, as NCCL 2.27 (4), 2.28 (5), 2.29-2.30 (6) or 2.31 (7) binds a plugin "
                 "exporting it; default: the newest exported, v7 first")
      ->check(CLI::Range(4, 7));
  app.add_option("--ranks-only", ranks_only, "start only these ranks (the ground truth still covers all)")->delimiter(',');
  app.add_flag("--preload", preload, "LD_PRELOAD the plugin into the ranks and set NCCL_PROFILER_PLUGIN=STATIC_PLUGIN (needs --plugin)");
  app.add_option("--time-scale", time_scale, "real seconds per simulated second; 0 plays without sleeping")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--exit", exit_mode,
                 "how each rank process ends after finalizing its communicators: return (from main: atexit handlers "
                 "and destructors run) or _exit (at once, as Python's multiprocessing workers and os._exit end)")
      ->check(CLI::IsMember({"return", "_exit"}))
      ->capture_default_str();
  app.add_flag("--verbose", verbose, "print NCCL INFO lines: plugin loading and what the plugin logs");
  app.add_option("--launcher", launcher,
                 "whose variables each rank gets: torchrun (RANK, WORLD_SIZE, TORCHELASTIC_RUN_ID, ...), slurm (SLURM_PROCID, "
                 "SLURM_JOB_ID, ...), openmpi (OMPI_COMM_WORLD_RANK, PMIX_NAMESPACE, ...), mpich (PMI_RANK, PMI_SIZE, "
                 "MPI_LOCALRANKID) or none (a plain process)")
      ->check(CLI::IsMember({"torchrun", "slurm", "openmpi", "mpich", "none"}))
      ->capture_default_str();
  app.add_option("--nccl-version", nccl_version,
                 "what ncclGetVersion answers, as a version code (23102 is 2.31.2); 0: it fails, as if the library had "
                 "none; default: the release that binds --profiler-version (2.31.2 when none is given)")
      ->check(CLI::Range(0, 99999));
  app.add_option("--v7-descriptor", v7_descriptor,
                 "descriptors a bound ncclProfiler_v7 gets: v7 (NVIDIA NCCL 2.31's layout) or v6 (the v6 descriptor under "
                 "the v7 name, as some NCCL-derived builds pass it)")
      ->check(CLI::IsMember({"v7", "v6"}))
      ->capture_default_str();
  app.add_flag("--check", check, "read the scenario and exit: 0 if it can be played, 2 with what is wrong (commtrace demo asks first)");
  app.add_option("--rank-process", rank_process, "internal: play this rank")->group("");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "commtrace: " << e.what() << "\nRun 'commtrace-nccl-driver --help' for usage.\n";
    return 2;
  }
  if (preload && plugin.empty()) {
    std::cerr << "commtrace: --preload needs --plugin PATH (the library to preload)\n";
    return 2;
  }

  try {
    const Scenario scenario = loadScenario(scenario_path);
    for (int r : ranks_only)
      if (r < 0 || r >= scenario.ranks())
        throw ScenarioError("commtrace: --ranks-only " + std::to_string(r) + ": scenario '" + scenario.name + "' has ranks 0.." +
                            std::to_string(scenario.ranks() - 1));
    if (check) return 0;
    const Timeline timeline = buildTimeline(scenario, rank_process);
    if (rank_process >= 0) {
      const int status =
          runRankProcess(scenario, timeline, rank_process,
                         {version, time_scale, verbose, nccl_version, v7_descriptor == "v6"}, std::cout, std::cerr);
      if (exit_mode == "_exit") {
        std::cout.flush();
        _exit(status);
      }
      return status;
    }

    LaunchOptions launch;
    launch.self = selfExecutable();
    launch.cupti = driverCupti(launch.self);
    launch.scenario_path = scenario_path;
    if (!plugin.empty()) launch.plugin = plugin;
    launch.out_dir = out_dir;
    launch.forced_version = version;
    launch.ranks = ranks_only;
    launch.preload = preload;
    launch.time_scale = time_scale;
    launch.verbose = verbose;
    launch.quick_exit = exit_mode == "_exit";
    const std::map<std::string, Launcher> launchers = {{"torchrun", Launcher::kTorchrun}, {"slurm", Launcher::kSlurm},
                                                       {"openmpi", Launcher::kOpenMpi}, {"mpich", Launcher::kMpich},
                                                       {"none", Launcher::kNone}};
    launch.launcher = launchers.at(launcher);
    launch.nccl_version = nccl_version;
    launch.v6_descriptors_as_v7 = v7_descriptor == "v6";
    return launchJob(scenario, timeline, launch, std::cout, std::cerr);
  } catch (const ScenarioError& e) {
    std::cerr << e.what() << '\n';
    return 2;
  }
}
