#include "interpose/launcher_env.h"

#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>

namespace commtrace {
namespace {

// The first of the variables that is set and a plain non-negative integer, else -1.
int32_t firstInt(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    const char* value = std::getenv(name);
    if (value == nullptr || value[0] == '\0') continue;
    char* end = nullptr;
    const long parsed = std::strtol(value, &end, 10);
    if (*end == '\0' && parsed >= 0 && parsed < (1L << 30)) return static_cast<int32_t>(parsed);
  }
  return -1;
}

const char* firstString(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    const char* value = std::getenv(name);
    if (value != nullptr && value[0] != '\0') return value;
  }
  return "";
}

std::atomic<int64_t> g_nccl_world{-1};  // rank << 32 | n_ranks, -1 until known

// The job's id as its launcher (or an ancestor's nameJobIfUnnamed) set it, or "".
const char* namedJobId() { return firstString({"TORCHELASTIC_RUN_ID", "SLURM_JOB_ID", "COMMTRACE_JOB_ID"}); }

// Made up by nameJobIfUnnamed when nothing names the job: "ct-<realtime ns>-<pid>" in hex.
char g_generated_job_id[48] = {};

}  // namespace

const char* nameJobIfUnnamed() {
  if (namedJobId()[0] != '\0') return nullptr;
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
  return firstInt({"RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK"});
}

FileIdentity launcherIdentity() {
  FileIdentity id;
  id.rank = globalRank();
  id.local_rank = firstInt({"LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK"});
  id.world_size = firstInt({"WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE"});
  id.job_id = namedJobId();
  if (id.job_id.empty()) id.job_id = g_generated_job_id;
  id.nccl_host_id = firstString({"NCCL_HOSTID"});
  if (const int64_t world = g_nccl_world.load(); world >= 0) id.world_size = static_cast<int32_t>(world & 0xffffffff);
  const int32_t restarts = firstInt({"TORCHELASTIC_RESTART_COUNT"});
  id.restart_count = restarts > 0 ? static_cast<uint32_t>(restarts) : 0;
  return id;
}

}  // namespace commtrace
