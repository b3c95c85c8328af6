#include "core/settings.h"

#include <strings.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace commtrace {
namespace {

constexpr std::string_view kCuptiModes[] = {"off", "on", "sampled"};

constexpr SettingSpec kSpecs[] = {
    {.name = "COMMTRACE_DIR",
     .kind = SettingKind::kPath,
     .help = "the directory trace files are written to, exactly (relative to where recording starts); created if "
             "missing. Unset: each job gets its own directory under commtrace-run/, named by its job id",
     .path = &Settings::dir,
     .default_note = "commtrace-run/<job id>"},
    {.name = "COMMTRACE_FLUSH_MS",
     .kind = SettingKind::kWholeNumber,
     .help = "the flusher's period in ms: also the most a SIGKILL can lose",
     .number = &Settings::flush_period_ms,
     .min = 10,
     .max = 60'000},
    {.name = "COMMTRACE_EXIT_FLUSH_MS",
     .kind = SettingKind::kWholeNumber,
     .help = "the longest a communicator's finalize, commtrace_stop(), _exit, exec or SIGTERM/SIGINT/SIGHUP waits "
             "for what was recorded to reach the file",
     .number = &Settings::exit_flush_ms,
     .min = 0,
     .max = 60'000},
    {.name = "COMMTRACE_RING_MEMORY_MB",
     .kind = SettingKind::kWholeNumber,
     .help = "the memory the recording threads' rings take together (2 MiB each), in MiB: a thread that would pass "
             "it records nothing until an exited thread's ring is freed, and its records are counted as dropped",
     .number = &Settings::ring_memory_mb,
     .min = 4,
     .max = 1'048'576},
    {.name = "COMMTRACE_TSC",
     .kind = SettingKind::kFlag,
     .help = "record CPU times from the TSC, steered onto CLOCK_MONOTONIC by the flusher, where the kernel keeps "
             "time by the TSC (2.5x cheaper per read on a VM). 0: every read is clock_gettime",
     .flag = &Settings::tsc},
    {.name = "COMMTRACE_KERNEL_TIMING",
     .kind = SettingKind::kFlag,
     .help = "KernelCh events (per-op GPU start/stop). 0 saves NCCL's kernel-profiling cost (a profiler proxy op "
             "per channel per op, host callbacks in graphs) but loses GPU times",
     .flag = &Settings::kernel_timing},
    {.name = "COMMTRACE_PROXY_EVENTS",
     .kind = SettingKind::kFlag,
     .help = "ProxyOp/ProxyStep events: one record per network transfer step, with per-peer bytes and wait states "
             "(costly on busy networks)",
     .flag = &Settings::proxy_events},
    {.name = "COMMTRACE_NCCL_API",
     .kind = SettingKind::kFlag,
     .help = "the nccl* wrappers record (communicators, ops the plugin cannot see); 0: they only forward",
     .flag = &Settings::nccl_api},
    {.name = "COMMTRACE_CUDA_SYNC",
     .kind = SettingKind::kFlag,
     .help = "the CUDA sync wrappers record the time the CPU is blocked; 0: they only forward",
     .flag = &Settings::cuda_sync},
    {.name = "COMMTRACE_NVTX",
     .kind = SettingKind::kFlag,
     .help = "NVTX ranges and marks (torch.cuda.nvtx, NCCL's own, the program's): the preloaded library sets "
             "NVTX_INJECTION64_PATH to itself when unset. 0: NVTX is left alone",
     .flag = &Settings::nvtx},
    {.name = "COMMTRACE_STACKS",
     .kind = SettingKind::kWholeNumber,
     .help = "the NCCL wrappers sample the native call stack of one op in N on average, and of each thread's first op "
             "of a communicator, op and size class, so that the report names the functions that issued them "
             "(symbolised offline). 0: no stacks",
     .number = &Settings::stacks,
     .min = 0,
     .max = 1u << 30},
    {.name = "COMMTRACE_CUPTI",
     .kind = SettingKind::kChoice,
     .help = "the GPU compute timeline from CUPTI (kernels, memcpy, memset), attached at the process's first NCCL "
             "communicator or CUDA sync call; backs off when another tool holds CUPTI. sampled: only for "
             "COMMTRACE_CUPTI_WINDOW_S of every COMMTRACE_CUPTI_PERIOD_S",
     .number = &Settings::cupti,
     .choices = kCuptiModes},
    {.name = "COMMTRACE_CUPTI_WINDOW_S",
     .kind = SettingKind::kWholeNumber,
     .help = "with COMMTRACE_CUPTI=sampled: seconds recorded at the start of each period",
     .number = &Settings::cupti_window_s,
     .min = 1,
     .max = 3600},
    {.name = "COMMTRACE_CUPTI_PERIOD_S",
     .kind = SettingKind::kWholeNumber,
     .help = "with COMMTRACE_CUPTI=sampled: seconds from the start of one window to the next",
     .number = &Settings::cupti_period_s,
     .min = 1,
     .max = 86'400},
    {.name = "COMMTRACE_CUPTI_LIB",
     .kind = SettingKind::kPath,
     .help = "the libcupti to load. Unset: the one the process has loaded already (PyTorch's), else libcupti.so.13 "
             "or .12 from the loader's path or the CUDA toolkit",
     .path = &Settings::cupti_lib,
     .default_note = "the process's own libcupti"},
    {.name = "COMMTRACE_JOB_ID",
     .kind = SettingKind::kText,
     .help = "the job id in every file header when no launcher names the job (torchrun's TORCHELASTIC_RUN_ID, "
             "SLURM_JOB_ID, Open MPI's or PMIx's job); children inherit it",
     .default_note = "generated by the first preloaded process"},
    {.name = "COMMTRACE_LIVE",
     .kind = SettingKind::kFlag,
     .help = "live alerts: every process of the job sends a signed digest of its ops each second to the job's collector, "
             "which global rank 0 starts on its host (`commtrace collect`) and which prints STRAGGLER, HANG and DROPS lines into "
             "the job's log. Needs COMMTRACE_COLLECT_ADDR or MASTER_ADDR, and the job's key (preloaded, or COMMTRACE_TOKEN)",
     .flag = &Settings::live},
    {.name = "COMMTRACE_COLLECT_PORT",
     .kind = SettingKind::kWholeNumber,
     .help = "the TCP port of the job's collector",
     .number = &Settings::collect_port,
     .min = 1,
     .max = 65535},
    {.name = "COMMTRACE_METRICS_PORT",
     .kind = SettingKind::kWholeNumber,
     .help = "the port on which the collector rank 0 starts serves the live metrics for Prometheus "
             "(http://<its host>:PORT/metrics). 0: none (the metrics file of --prom-dir / COMMTRACE_PROM_DIR still works)",
     .number = &Settings::metrics_port,
     .min = 0,
     .max = 65535},
    {.name = "COMMTRACE_PROM_DIR",
     .kind = SettingKind::kPath,
     .help = "a directory node-exporter's textfile collector reads on every host: each process rewrites "
             "DIR/commtrace-pid<PID>.prom every 5 s (its ops, bus bytes and GPU time by communicator, func, size, algorithm "
             "and protocol; its oldest op in flight; its drops) and removes it when it stops; the job's collector writes "
             "its job-wide view (stragglers, hangs, busBw) to DIR/commtrace.prom on its host",
     .path = &Settings::prom_dir,
     .default_note = "no metrics files"},
    {.name = "COMMTRACE_COLLECT_ADDR",
     .kind = SettingKind::kText,
     .help = "the host of a collector run standalone (`commtrace collect --listen`, e.g. on a login node): the processes "
             "send there and rank 0 starts none",
     .default_note = "MASTER_ADDR, where rank 0 starts one"},
    {.name = "COMMTRACE_COLLECT_BIND",
     .kind = SettingKind::kText,
     .help = "the address rank 0's collector listens on (0.0.0.0: every interface). Unset: MASTER_ADDR's address when "
             "it is one of rank 0's host's own; else every interface (MASTER_ADDR a name that resolves to loopback on "
             "rank 0's host, as Debian's /etc/hosts makes it, or an address the host does not have)",
     .default_note = "MASTER_ADDR's address"},
    {.name = "COMMTRACE_TOKEN",
     .kind = SettingKind::kText,
     .help = "the secret the live digests are signed with, the same in every process of the job (and a standalone "
             "collector). Unset: derived from the world communicator's ncclUniqueId, which only the preloaded library sees",
     .default_note = "derived from the world ncclUniqueId"},
};

constexpr Settings kDefaults{};
std::once_flag g_loaded;

bool parseFlag(const char* value, bool& out) {
  for (const char* yes : {"1", "true", "yes", "on"}) {
    if (strcasecmp(value, yes) == 0) return out = true, true;
  }
  for (const char* no : {"0", "false", "no", "off"}) {
    if (strcasecmp(value, no) == 0) return out = false, true;
  }
  return false;
}

bool parseWholeNumber(const char* value, uint32_t min, uint32_t max, uint32_t& out) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long parsed = std::strtoull(value, &end, 10);
  if (errno != 0 || *end != '\0' || value[0] == '-' || value[0] == '+' || parsed < min || parsed > max) return false;
  out = static_cast<uint32_t>(parsed);
  return true;
}

bool parseChoice(const char* value, std::span<const std::string_view> choices, uint32_t& out) {
  for (size_t i = 0; i < choices.size(); ++i) {
    if (choices[i].size() == std::strlen(value) && strncasecmp(value, choices[i].data(), choices[i].size()) == 0) {
      out = static_cast<uint32_t>(i);
      return true;
    }
  }
  return false;
}

// One setting from its variable; false (the default kept) when the value is bad.
bool parseOne(const SettingSpec& spec, const char* value, Settings& out) {
  switch (spec.kind) {
    case SettingKind::kFlag: return parseFlag(value, out.*spec.flag);
    case SettingKind::kWholeNumber: return parseWholeNumber(value, spec.min, spec.max, out.*spec.number);
    case SettingKind::kChoice: return parseChoice(value, spec.choices, out.*spec.number);
    case SettingKind::kPath:
      if (std::strlen(value) >= PATH_MAX) return false;
      std::strcpy(out.*spec.path, value);
      return true;
    case SettingKind::kText: return true;
  }
  return true;
}

void warnBadValue(const SettingSpec& spec, const char* value) {
  switch (spec.kind) {
    case SettingKind::kFlag:
      std::fprintf(stderr, "commtrace: %.*s=%s is not 1/0, true/false, yes/no or on/off; using %d\n",
                   static_cast<int>(spec.name.size()), spec.name.data(), value, kDefaults.*spec.flag ? 1 : 0);
      break;
    case SettingKind::kWholeNumber:
      std::fprintf(stderr, "commtrace: %.*s=%s is not a whole number in [%u, %u]; using %u\n",
                   static_cast<int>(spec.name.size()), spec.name.data(), value, spec.min, spec.max,
                   kDefaults.*spec.number);
      break;
    case SettingKind::kChoice: {
      char listed[128] = {};
      for (std::string_view choice : spec.choices) {
        std::snprintf(listed + std::strlen(listed), sizeof listed - std::strlen(listed), "%s%.*s",
                      listed[0] != '\0' ? ", " : "", static_cast<int>(choice.size()), choice.data());
      }
      const std::string_view used = spec.choices[kDefaults.*spec.number];
      std::fprintf(stderr, "commtrace: %.*s=%s is not one of %s; using %.*s\n", static_cast<int>(spec.name.size()),
                   spec.name.data(), value, listed, static_cast<int>(used.size()), used.data());
      break;
    }
    case SettingKind::kPath:
      std::fprintf(stderr, "commtrace: %.*s is longer than %d bytes; using %.*s\n", static_cast<int>(spec.name.size()),
                   spec.name.data(), PATH_MAX - 1, static_cast<int>(spec.default_note.size()), spec.default_note.data());
      break;
    case SettingKind::kText: break;
  }
}

}  // namespace

constinit Settings g_settings{};

std::span<const SettingSpec> settingSpecs() { return kSpecs; }

const Settings& defaultSettings() { return kDefaults; }

Settings parseSettings(EnvLookup lookup) {
  Settings out = kDefaults;
  for (const SettingSpec& spec : kSpecs) {
    const char* value = lookup(spec.name.data());  // every name is a NUL-terminated literal
    if (value == nullptr || value[0] == '\0') continue;
    if (!parseOne(spec, value, out)) warnBadValue(spec, value);
  }
  return out;
}

void loadSettings() {
  std::call_once(g_loaded, [] { g_settings = parseSettings([](const char* name) -> const char* { return std::getenv(name); }); });
}

}  // namespace commtrace
