#include "tools/nccl-driver/gpu_activity.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "core/nccl_vocab.h"

namespace commtrace::driver {
namespace {

constexpr uint32_t kComputeStream = 7;
constexpr uint32_t kFirstCommStream = 100;  // one NCCL stream per communicator, as NCCL has

// NCCL's device kernels are named by what they run: one collective's function, algorithm
// and protocol, "SendRecv" for point-to-point work, or "Generic"; CUPTI reports the name
// mangled, as it reports every C++ kernel's (seen on an H100 with NCCL 2.28.9).
std::string ncclKernelName(std::string_view what) {
  const std::string function = "ncclDevKernel_" + std::string(what);
  return "_Z" + std::to_string(function.size()) + function + "24ncclDevKernelArgsStorageILm4096EE";
}

std::string ncclKernelName(const RankCall& call) {
  if (!isCollective(call.task_func)) return ncclKernelName("SendRecv");
  return ncclKernelName(std::string(nccl::funcInfo(call.task_func).name) + "_" + call.algo + "_" + call.proto);
}

}  // namespace

GpuActivity::GpuActivity(const Scenario& scenario, const Timeline& timeline, int rank)
    : s_(scenario), program_(timeline.ranks[rank]), node_(scenario.nodeOf(rank)),
      device_(static_cast<uint32_t>(rank % scenario.ranks_per_node)) {
  const char* library = std::getenv("COMMTRACE_CUPTI_LIB");
  if (library == nullptr || library[0] == '\0') return;
  void* handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);  // the very copy the CUPTI face opened
  if (handle == nullptr) return;
  kernel_ = reinterpret_cast<KernelFn>(dlsym(handle, "fakeCuptiKernel"));
  pace_ = reinterpret_cast<PaceFn>(dlsym(handle, "fakeCuptiPace"));
}

void GpuActivity::pace(uint64_t sim_ns, double time_scale) {
  if (pace_ != nullptr && time_scale > 0) pace_(cuptiTime(s_, node_, sim_ns), time_scale);
}

void GpuActivity::computeUntil(uint64_t sim_ns) {
  if (kernel_ == nullptr) return;
  std::lock_guard lock(mutex_);
  for (; next_compute_ < program_.compute.size() && program_.compute[next_compute_].end_sim_ns <= sim_ns; ++next_compute_) {
    const ComputeSpan& k = program_.compute[next_compute_];
    kernel_(k.kernel->c_str(), cuptiTime(s_, node_, k.start_sim_ns), cuptiTime(s_, node_, k.end_sim_ns), device_,
            kComputeStream, ++correlation_);
  }
}

void GpuActivity::ncclKernel(const std::vector<const RankCall*>& plan) {
  if (kernel_ == nullptr || plan.empty()) return;
  uint64_t start = UINT64_MAX, stop = 0;
  for (const RankCall* call : plan) {
    start = std::min(start, call->start_sim_ns);
    stop = std::max(stop, call->stop_sim_ns);
  }
  const std::string name = plan.size() == 1 ? ncclKernelName(*plan.front()) : ncclKernelName("Generic");
  std::lock_guard lock(mutex_);
  kernel_(name.c_str(), cuptiTime(s_, node_, start), cuptiTime(s_, node_, stop), device_,
          kFirstCommStream + static_cast<uint32_t>(plan.front()->comm), ++correlation_);
}

}  // namespace commtrace::driver
