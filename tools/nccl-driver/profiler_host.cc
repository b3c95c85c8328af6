#include "tools/nccl-driver/profiler_host.h"

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace commtrace::driver {
namespace {

// The logger is a plain function pointer, so what it needs is process-global, as in NCCL.
std::mutex g_log_mutex;
std::string g_log_prefix = "commtrace-nccl-driver";
bool g_log_verbose = false;

const char* levelName(int level) {
  switch (level) {
    case 1: return "VERSION";
    case nccl::kLogWarn: return "WARN";
    case nccl::kLogInfo: return "INFO";
    case 4: return "ABORT";
    case 5: return "TRACE";
  }
  return "LOG";
}

// What the exported ncclGetVersion answers (0: it fails, as a library without it would
// leave the plugin with no version).
std::atomic<int> g_nccl_version{0};

}  // namespace

int ncclVersionBinding(int version) {
  switch (version) {
    case 4: return 22707;  // 2.27.7
    case 5: return 22809;  // 2.28.9
    case 6: return 22907;  // 2.29.7
    default: return 23102;  // 2.31.2: v7
  }
}

void ncclStyleLog(int level, unsigned long /*flags*/, const char* /*file*/, int /*line*/, const char* fmt, ...) {
  std::lock_guard lock(g_log_mutex);
  if (level > nccl::kLogWarn && !g_log_verbose) return;
  char message[1024];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(message, sizeof message, fmt != nullptr ? fmt : "", args);
  va_end(args);
  std::fprintf(stderr, "%s: NCCL %s %s\n", g_log_prefix.c_str(), levelName(level), message);
}

ProfilerHost::ProfilerHost(HostOptions options) : options_(std::move(options)) {
  g_nccl_version.store(options_.nccl_version >= 0 ? options_.nccl_version : ncclVersionBinding(options_.forced_version));
  std::lock_guard lock(g_log_mutex);
  g_log_prefix = options_.log_prefix;
  g_log_verbose = options_.verbose;
}

ProfilerHost::~ProfilerHost() = default;

int ProfilerHost::mask() const {
  return std::atomic_ref<int>(const_cast<int&>(mask_)).load(std::memory_order_relaxed);
}

bool ProfilerHost::acquireLibrary() {
  std::lock_guard lock(mutex_);
  if (load_failed_) return false;  // sticky: NCCL never retries in this process
  if (library_) {
    ++holders_;
    return true;
  }
  PluginLibrary::Opened opened = PluginLibrary::open(options_.plugin ? options_.plugin->c_str() : nullptr, options_.forced_version,
                                                     options_.v6_descriptors_as_v7);
  status_ = opened.status;
  if (!opened.library) {
    load_failed_ = true;
    load_message_ = opened.message;
    if (opened.status == PluginLibrary::Status::kFailed) ncclStyleLog(nccl::kLogWarn, nccl::kLogSubsysProfile, __FILE__, __LINE__, "%s", load_message_.c_str());
    return false;
  }
  library_ = std::move(opened.library);
  ++loads_;
  holders_ = 1;
  bound_version_ = library_->api().version();
  bound_name_ = library_->api().name();
  load_message_.clear();
  ncclStyleLog(nccl::kLogInfo, nccl::kLogSubsysProfile, __FILE__, __LINE__, "PROFILER/Plugin: Loaded %s (v%d)",
               bound_name_.c_str(), bound_version_);
  ncclStyleLog(nccl::kLogInfo, nccl::kLogSubsysProfile, __FILE__, __LINE__, "Successfully loaded external profiler plugin %s",
               library_->openedAs().c_str());
  return true;
}

void ProfilerHost::releaseLibrary() {
  std::lock_guard lock(mutex_);
  if (holders_ > 0 && --holders_ == 0 && library_) {
    ncclStyleLog(nccl::kLogInfo, nccl::kLogSubsysProfile, __FILE__, __LINE__, "PROFILER/Plugin: Closing profiler plugin %s",
                 bound_name_.c_str());
    library_.reset();
  }
}

CommProfile ProfilerHost::initComm(uint64_t comm_id, const char* comm_name, int n_nodes, int n_ranks, int rank) {
  CommProfile comm;
  if (!acquireLibrary()) return comm;
  comm.holds_library = true;
  const nccl::Result result =
      library_->api().init(&comm.context, comm_id, &mask_, comm_name, n_nodes, n_ranks, rank, &ncclStyleLog);
  if (result != nccl::kSuccess) {
    ncclStyleLog(nccl::kLogWarn, nccl::kLogSubsysProfile, __FILE__, __LINE__,
                 "Profiler init failed with error '%d': %s. Continue without profiler.", static_cast<int>(result), std::strerror(errno));
    // NCCL drops its reference here and again at finalize; we drop it once.
    comm.holds_library = false;
    comm.context = nullptr;
    releaseLibrary();
    return comm;
  }
  comm.profiled = true;
  return comm;
}

void ProfilerHost::finalizeComm(CommProfile& comm) {
  if (comm.profiled && comm.context != nullptr && library_) library_->api().finalize(comm.context);
  comm.profiled = false;
  comm.context = nullptr;
  if (comm.holds_library) releaseLibrary();
  comm.holds_library = false;
}

}  // namespace commtrace::driver

// NCCL's ncclGetVersion, exported (exports.list) so that a plugin finds it as it finds the
// real one: ncclResult_t is an int, ncclSuccess 0, ncclInvalidUsage 5.
extern "C" __attribute__((visibility("default"))) int ncclGetVersion(int* version) {
  const int code = commtrace::driver::g_nccl_version.load();
  if (version == nullptr || code == 0) return 5;
  *version = code;
  return 0;
}
