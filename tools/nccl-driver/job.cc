#include "tools/nccl-driver/job.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iomanip>
#include <map>
#include <sstream>

#include "tools/nccl-driver/ground_truth.h"
#include "tools/nccl-driver/rank_player.h"

extern char** environ;

namespace commtrace::driver {
namespace {

using Env = std::map<std::string, std::string>;

// What torchrun gives a worker.
void torchrunVariables(const Scenario& s, int rank, Env& env) {
  const int node = s.nodeOf(rank);
  env["RANK"] = std::to_string(rank);
  env["LOCAL_RANK"] = std::to_string(rank % s.ranks_per_node);
  env["WORLD_SIZE"] = std::to_string(s.ranks());
  env["LOCAL_WORLD_SIZE"] = std::to_string(s.ranks_per_node);
  env["GROUP_RANK"] = env["NODE_RANK"] = std::to_string(node);
  env["GROUP_WORLD_SIZE"] = std::to_string(s.nodes);
  env["ROLE_RANK"] = std::to_string(rank);
  env["ROLE_WORLD_SIZE"] = std::to_string(s.ranks());
  env["MASTER_ADDR"] = "127.0.0.1";
  env["MASTER_PORT"] = "29500";
  env["TORCHELASTIC_RUN_ID"] = "commtrace-" + s.name;
}

// What srun gives a task, Open MPI 5's mpirun (PRRTE, PMIx) a process, MPICH's Hydra a process.
void launcherVariables(const Scenario& s, Launcher launcher, int rank, Env& env) {
  const std::string r = std::to_string(rank), local = std::to_string(rank % s.ranks_per_node),
                    n = std::to_string(s.ranks());
  switch (launcher) {
    case Launcher::kTorchrun: torchrunVariables(s, rank, env); break;
    case Launcher::kSlurm:
      env["SLURM_PROCID"] = r;
      env["SLURM_LOCALID"] = local;
      env["SLURM_NTASKS"] = n;
      env["SLURM_NODEID"] = std::to_string(s.nodeOf(rank));
      env["SLURM_JOB_ID"] = kSlurmJobId;
      break;
    case Launcher::kOpenMpi:
      env["OMPI_COMM_WORLD_RANK"] = env["PMIX_RANK"] = r;
      env["OMPI_COMM_WORLD_LOCAL_RANK"] = local;
      env["OMPI_COMM_WORLD_SIZE"] = n;
      env["PMIX_NAMESPACE"] = kOpenMpiNamespace;
      break;
    case Launcher::kMpich:
      env["PMI_RANK"] = r;
      env["PMI_SIZE"] = n;
      env["MPI_LOCALRANKID"] = local;
      break;
    case Launcher::kNone: break;
  }
}

// The launcher's environment for one rank, plus what NCCL and commtrace read.
std::vector<std::string> rankEnvironment(const Scenario& s, const LaunchOptions& o, int rank) {
  Env env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e;
    const size_t eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  const int node = s.nodeOf(rank);
  launcherVariables(s, o.launcher, rank, env);
  // NCCL decides "same host" from NCCL_HOSTID when set: one per simulated node.
  env["NCCL_HOSTID"] = "commtrace-" + s.name + "-node" + std::to_string(node);
  if (!env.count("COMMTRACE_DIR")) env["COMMTRACE_DIR"] = o.out_dir;
  if (!env.count("COMMTRACE_CUPTI_LIB") && !o.cupti.empty()) env["COMMTRACE_CUPTI_LIB"] = o.cupti;
  if (o.preload) {
    const auto it = env.find("LD_PRELOAD");
    env["LD_PRELOAD"] = *o.plugin + (it != env.end() && !it->second.empty() ? ":" + it->second : "");
    env["NCCL_PROFILER_PLUGIN"] = "STATIC_PLUGIN";
  } else if (o.plugin) {
    env["NCCL_PROFILER_PLUGIN"] = *o.plugin;
    // The ranks' NVTX ranges go to the plugin too, as the preloaded library points them.
    const bool a_file = o.plugin->find('/') != std::string::npos || o.plugin->ends_with(".so");
    if (a_file && !env.count("NVTX_INJECTION64_PATH")) env["NVTX_INJECTION64_PATH"] = *o.plugin;
  }
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

std::vector<std::string> rankArguments(const LaunchOptions& o, int rank) {
  std::vector<std::string> args = {o.self, "--rank-process", std::to_string(rank), "--scenario", o.scenario_path};
  if (o.forced_version != 0) args.insert(args.end(), {"--profiler-version", std::to_string(o.forced_version)});
  if (o.time_scale > 0) {
    std::ostringstream scale;
    scale << o.time_scale;
    args.insert(args.end(), {"--time-scale", scale.str()});
  }
  if (o.verbose) args.push_back("--verbose");
  if (o.quick_exit) args.insert(args.end(), {"--exit", "_exit"});
  if (o.nccl_version >= 0) args.insert(args.end(), {"--nccl-version", std::to_string(o.nccl_version)});
  if (o.v6_descriptors_as_v7) args.insert(args.end(), {"--v7-descriptor", "v6"});
  return args;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

std::string describeStatus(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  return "ended with wait status " + std::to_string(status);
}

}  // namespace

int launchJob(const Scenario& s, const Timeline& t, const LaunchOptions& o, std::ostream& out, std::ostream& err) {
  std::error_code ec;
  std::filesystem::create_directories(o.out_dir, ec);
  if (ec) {
    err << "commtrace: " << o.out_dir << ": cannot create the output directory: " << ec.message() << '\n';
    return 1;
  }
  std::string error;
  if (!writeGroundTruth(s, t, o.out_dir, error)) {
    err << error << '\n';
    return 1;
  }
  std::vector<int> ranks = o.ranks;
  if (ranks.empty())
    for (int r = 0; r < s.ranks(); ++r) ranks.push_back(r);
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  out << "commtrace-nccl-driver: scenario '" << s.name << "': " << ranks.size() << " of " << s.ranks() << " ranks on "
      << s.nodes << " node(s), " << s.steps << " steps; ground truth in " << o.out_dir << '/' << kGroundTruthFile << std::endl;

  const auto start = std::chrono::steady_clock::now();
  std::map<pid_t, int> running;  // pid -> rank
  int failed = 0;
  for (int rank : ranks) {
    // Everything the child needs is built before fork: it only calls execve.
    std::vector<std::string> env = rankEnvironment(s, o, rank), args = rankArguments(o, rank);
    std::vector<char*> envp = pointers(env), argv = pointers(args);
    const pid_t pid = fork();
    if (pid == 0) {
      execve(argv[0], argv.data(), envp.data());
      _exit(127);
    }
    if (pid < 0) {
      err << "commtrace: cannot start rank " << rank << ": " << std::strerror(errno) << '\n';
      ++failed;
      continue;
    }
    running[pid] = rank;
  }
  while (!running.empty()) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;
    }
    const auto it = running.find(pid);
    if (it == running.end()) continue;
    const bool planted_kill = it->second == s.killed_rank && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
    if (planted_kill) {
      out << "commtrace-nccl-driver: rank " << it->second << " was killed at step " << s.killed_at_step << ", as planted" << std::endl;
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      // One write per line: the ranks share this stderr.
      err << "commtrace: rank " + std::to_string(it->second) + " (pid " + std::to_string(pid) + ") " + describeStatus(status) +
                 (WIFEXITED(status) && WEXITSTATUS(status) == 127 ? " (could not execute " + o.self + ")" : "") + "\n";
      ++failed;
    }
    running.erase(it);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (failed > 0) {
    err << "commtrace: " + std::to_string(failed) + " of " + std::to_string(ranks.size()) + " ranks failed\n";
    return 1;
  }
  out << "commtrace-nccl-driver: all " << ranks.size() << " ranks finished in " << std::fixed
      << std::setprecision(2) << seconds << " s" << std::endl;
  return 0;
}

int runRankProcess(const Scenario& s, const Timeline& t, int rank, const RankProcessOptions& o, std::ostream& out,
                   std::ostream& err) {
  if (rank < 0 || rank >= s.ranks()) {
    err << "commtrace: rank " << rank << " is not a rank of scenario '" << s.name << "' (0.." << s.ranks() - 1 << ")\n";
    return 2;
  }
  HostOptions host_options;
  if (const char* plugin = std::getenv("NCCL_PROFILER_PLUGIN")) host_options.plugin = plugin;
  host_options.forced_version = o.forced_version;
  host_options.verbose = o.verbose;
  host_options.nccl_version = o.nccl_version;
  host_options.v6_descriptors_as_v7 = o.v6_descriptors_as_v7;
  host_options.log_prefix = "rank " + std::to_string(rank);
  ProfilerHost host(host_options);
  RankPlayer player(s, t, static_cast<int>(rank), host, PlayOptions{o.time_scale});
  const PlayStats stats = player.play();
  if (host.status() == PluginLibrary::Status::kFailed && !host.loadMessage().empty()) {
    err << "commtrace: rank " + std::to_string(rank) + ": no profiler plugin was bound, nothing was traced: " + host.loadMessage() + "\n";
    return 1;
  }
  std::ostringstream line;  // one write, so lines of concurrent ranks do not interleave
  line << "rank " << rank << "/" << s.ranks() << " done: " << stats.calls << " NCCL calls, " << stats.coll_events << " Coll + "
       << stats.p2p_events << " P2p events";
  if (host.status() == PluginLibrary::Status::kLoaded)
    line << ", plugin '" << host.boundName() << "' bound as ncclProfiler_v" << host.boundVersion();
  else
    line << ", no profiler (NCCL_PROFILER_PLUGIN=none)";
  out << line.str() << std::endl;
  return 0;
}

}  // namespace commtrace::driver
