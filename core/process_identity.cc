#include "core/process_identity.h"

#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace commtrace {
namespace {

constexpr LauncherVariables kLaunchers[] = {
    {"torchrun", "RANK", "LOCAL_RANK", "WORLD_SIZE", "TORCHELASTIC_RUN_ID"},
    {"Slurm", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", "SLURM_JOB_ID"},
    {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE",
     "OMPI_MCA_orte_ess_jobid"},
    {"PMIx", "PMIX_RANK", nullptr, nullptr, "PMIX_NAMESPACE"},
    {"MPICH/PMI", "PMI_RANK", "MPI_LOCALRANKID", "PMI_SIZE", nullptr},
};

const char* envText(EnvLookup lookup, const char* name) {
  if (name == nullptr) return nullptr;
  const char* value = lookup(name);
  return value != nullptr && value[0] != '\0' ? value : nullptr;
}

// A plain non-negative integer, else -1.
int32_t envInt(EnvLookup lookup, const char* name) {
  const char* value = envText(lookup, name);
  if (value == nullptr) return -1;
  char* end = nullptr;
  const long parsed = std::strtol(value, &end, 10);
  return *end == '\0' && parsed >= 0 && parsed < (1L << 30) ? static_cast<int32_t>(parsed) : -1;
}

// The first launcher's value of one field; which launcher gave it in `from`.
template <class Field>
int32_t firstInt(EnvLookup lookup, Field field, const char** from = nullptr) {
  for (const LauncherVariables& l : kLaunchers) {
    const int32_t value = envInt(lookup, l.*field);
    if (value < 0) continue;
    if (from != nullptr) *from = l.launcher;
    return value;
  }
  return -1;
}

// torchrun names a job "none" unless given --rdzv-id on several nodes: no name at all.
const char* namedJobId(EnvLookup lookup) {
  for (const LauncherVariables& l : kLaunchers) {
    const char* value = envText(lookup, l.job_id);
    if (value != nullptr && std::strcmp(value, "none") != 0) return value;
  }
  return envText(lookup, "COMMTRACE_JOB_ID");
}

const char* processEnv(const char* name) { return std::getenv(name); }

std::atomic<int64_t> g_nccl_world{-1};  // rank << 32 | n_ranks, -1 until known

// Made up by nameJobIfUnnamed when nothing names the job: "ct-<realtime ns>-<pid>" in hex.
char g_generated_job_id[48] = {};

}  // namespace

std::span<const LauncherVariables> launchers() { return kLaunchers; }

ProcessIdentity identityFrom(EnvLookup lookup, const char* generated_job_id) {
  ProcessIdentity id;
  const char* launcher = "";
  id.rank = firstInt(lookup, &LauncherVariables::rank, &launcher);
  id.launcher = launcher;
  id.local_rank = firstInt(lookup, &LauncherVariables::local_rank);
  id.world_size = firstInt(lookup, &LauncherVariables::world_size);
  const char* job = namedJobId(lookup);
  id.job_id = job != nullptr ? job : generated_job_id;
  if (const char* host_id = envText(lookup, "NCCL_HOSTID")) id.nccl_host_id = host_id;
  const int32_t restarts = envInt(lookup, "TORCHELASTIC_RESTART_COUNT");
  id.restart_count = restarts > 0 ? static_cast<uint32_t>(restarts) : 0;
  return id;
}

const char* nameJobIfUnnamed() {
  if (namedJobId(&processEnv) != nullptr) return nullptr;
  timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  const uint64_t ns = static_cast<uint64_t>(now.tv_sec) * 1000000000u + static_cast<uint64_t>(now.tv_nsec);
  std::snprintf(g_generated_job_id, sizeof g_generated_job_id, "ct-%" PRIx64 "-%x", ns,
                static_cast<unsigned>(getpid()));
  return g_generated_job_id;
}

bool noteNcclWorldRank(int32_t rank, int32_t n_ranks) {
  if (rank < 0 || n_ranks <= 0) return false;
  int64_t unknown = -1;
  return g_nccl_world.compare_exchange_strong(unknown, int64_t{rank} << 32 | static_cast<uint32_t>(n_ranks));
}

int32_t globalRank() {
  // NCCL's answer wins over the launcher's: it is the rank the job's traffic is keyed by.
  if (const int64_t world = g_nccl_world.load(); world >= 0) return static_cast<int32_t>(world >> 32);
  return firstInt(&processEnv, &LauncherVariables::rank);
}

ProcessIdentity processIdentity() {
  ProcessIdentity id = identityFrom(&processEnv, g_generated_job_id);
  if (const int64_t world = g_nccl_world.load(); world >= 0) {
    id.rank = static_cast<int32_t>(world >> 32);
    id.world_size = static_cast<int32_t>(world & 0xffffffff);
  }
  return id;
}

}  // namespace commtrace
