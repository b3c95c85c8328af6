#include "tools/report/analyses/overlap.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <memory>
#include <thread>
#include <map>
#include <functional>
#include <span>
#include <string>
#include <tuple>

#include "tools/report/analyses/overlap_sweep.h"
#include "tools/report/analyses/process_ops.h"
#include "tools/report/load/own_ops.h"
#include "tools/report/load/phase_keeper.h"

namespace commtrace::report {
namespace {

constexpr const char* kNoComputeReason = "no compute-kernel records: CUPTI was not attached";
constexpr const char* kUnplacedComputeReason =
    "compute kernels recorded, but not placed on the GPU clock: no NCCL kernel CUPTI reported matched an op the "
    "plugin timed";
constexpr const char* kNoCommReason = "no communication kernel with GPU times recorded";

using Window = StepWindow;

// Dense ids for (comm, func, bytes, side), so that op sequences compare as integers. Computed
// once per instance and transfer side, not once per member.
struct OpKeys {
  std::vector<uint32_t> collective;  // per RunModel::collectives
  std::vector<uint32_t> send, recv;  // per RunModel::transfers

  explicit OpKeys(const RunModel& run) {
    std::map<std::tuple<uint32_t, NameId, uint64_t, int32_t>, uint32_t> ids;
    auto id = [&](uint32_t comm, NameId func, uint64_t bytes, int32_t side) {
      return ids.try_emplace({comm, func, bytes, side}, static_cast<uint32_t>(ids.size())).first->second;
    };
    for (const CollInstance& c : run.collectives) collective.push_back(id(c.comm, c.func, c.bytes, 0));
    for (const P2pTransfer& t : run.transfers) {
      send.push_back(id(t.comm, t.func, t.bytes, ProcessOp::kSendSide));
      recv.push_back(id(t.comm, t.func, t.bytes, ProcessOp::kRecvSide));
    }
  }
  uint32_t of(const ProcessOp& op) const {
    if (op.isCollective()) return collective[op.index];
    return op.slot == ProcessOp::kSendSide ? send[op.index] : recv[op.index];
  }
};

RankOp rankOp(uint64_t cpu_start, uint64_t gpu_start, uint64_t gpu_end, uint64_t op_index, uint32_t key, OpSide side,
              uint32_t path = 0) {
  const bool has_gpu = gpu_end > gpu_start && gpu_start != 0;
  return RankOp{.issue_ns = cpu_start != 0 ? cpu_start : gpu_start,
                .gpu_start_ns = has_gpu ? gpu_start : 0,
                .gpu_end_ns = has_gpu ? gpu_end : 0,
                .op_index = op_index,
                .key = key,
                .side = static_cast<uint8_t>(side),
                .path = path};
}

RankOp rankOp(const RunModel& run, const ProcessOp& op, const OpKeys& keys) {
  const MemberView& m = memberOf(run, op);
  if (op.isCollective()) {
    const CollInstance& c = run.collectives[op.index];
    return rankOp(m.cpu_start_ns, m.gpu_start_ns, m.gpu_end_ns, c.op_index, keys.of(op), OpSide::kCollective);
  }
  const OpSide side = op.slot == ProcessOp::kSendSide ? OpSide::kSend : OpSide::kRecv;
  return rankOp(m.cpu_start_ns, m.gpu_start_ns, m.gpu_end_ns, run.transfers[op.index].op_index, keys.of(op), side);
}

// Steps from NVTX (StepRule), mapped from the CPU clock to the GPU clock.
std::vector<Window> nvtxSteps(const ProcessInfo& process, const ProcessTimeline& timeline, const NamePool& names,
                              const StepRule& rule) {
  if (!process.gpu_from_cpu.valid || timeline.phases.empty()) return {};
  std::function<bool(std::string_view)> step_range;
  if (rule.set()) step_range = [&](std::string_view name) { return rule.matches(name); };
  std::vector<Window> steps;
  for (const PhaseSpan& ph : stepRanges(timeline.phases, names, step_range)) {
    const Window w{process.gpu_from_cpu.mapNs(ph.cpu_start_ns), process.gpu_from_cpu.mapNs(ph.cpu_end_ns)};
    if (w.end_ns > w.start_ns) steps.push_back(w);
  }
  return steps;
}

const ProcessTimeline& timelineOf(const RunModel& run, size_t p) {
  static const ProcessTimeline kNoTimeline;
  return p < run.timelines.size() ? run.timelines[p] : kNoTimeline;
}

// One process's row, its ops swept as the source gives them; `windows`, when given, gets
// its steps.
// The sweep's exposed time by path id, as the timeline's path names.
std::vector<PathExposure> namedExposure(const ProcessTimeline& timeline, const OverlapSweep& sweep) {
  std::map<NameId, uint64_t> by_name;
  for (const auto& [id, ns] : sweep.exposedByPath()) {
    const auto name = timeline.path_names.find(id);
    if (name != timeline.path_names.end()) by_name[name->second] += ns;
  }
  std::vector<PathExposure> named;
  for (const auto& [path, ns] : by_name) named.push_back({path, ns});
  return named;
}

OverlapRow overlapOfProcess(const RunModel& run, size_t p, const ProcessOpSource& source, const StepRule& rule,
                            std::vector<StepWindow>* windows = nullptr, GapBusyTime* busy = nullptr,
                            std::vector<PathExposure>* exposed_by_path = nullptr) {
  const ProcessTimeline& timeline = timelineOf(run, p);
  OverlapRow row;
  row.rank = run.processes[p].rank;
  row.step_source = "none";
  row.available = timeline.has_kernel_records && timeline.unmapped_kernels == 0;
  if (!timeline.has_kernel_records) row.reason = kNoComputeReason;
  else if (!row.available) row.reason = kUnplacedComputeReason;
  const ProcessInfo::CuptiMatch& match = run.processes[p].cupti_match;
  row.clock_kernels = match.nccl_kernels;
  row.clock_matched = match.matched;
  row.clock_residual_us = match.residual_rms_ns / 1e3;

  IntervalUnion::Observer on_compute;
  if (busy != nullptr && row.available) on_compute = busy->observer(p);
  const bool by_path = exposed_by_path != nullptr && !timeline.path_names.empty();
  OverlapSweep sweep(nvtxSteps(run.processes[p], timeline, run.names, rule), row.available, std::move(on_compute), by_path);
  source(p, {.op = [&](const RankOp& op) { sweep.add(op); }, .kernel = [&](const GpuInterval& k) { sweep.addKernel(k); }});
  if (!sweep.finish(row, windows)) {
    row.available = false;
    row.reason = kNoCommReason;
  }
  if (by_path && row.available) *exposed_by_path = namedExposure(timeline, sweep);
  return row;
}

// each(p) for every process, on up to `threads` threads.
template <class PerProcess>
void forEachProcess(size_t processes, unsigned threads, PerProcess&& each) {
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t p; (p = next.fetch_add(1)) < processes;) each(p);
  };
  std::vector<std::jthread> helpers;
  for (unsigned t = 1; t < std::min<size_t>(threads, processes); ++t) helpers.emplace_back(work);
  work();
}

}  // namespace

bool StepRule::matches(std::string_view name) const {
  return name == range_ || std::regex_match(name.begin(), name.end(), pattern_);
}

ProcessOpSource opsFromModel(const RunModel& run) {
  auto refs = std::make_shared<const std::vector<std::vector<ProcessOp>>>(opsByProcess(run));
  auto keys = std::make_shared<const OpKeys>(run);
  return [&run, refs, keys](size_t p, const ProcessItems& each) {
    for (const GpuInterval& kernel : timelineOf(run, p).compute) each.kernel(kernel);
    for (const ProcessOp& ref : (*refs)[p]) each.op(rankOp(run, ref, *keys));
  };
}

ProcessOpSource opsFromFiles(const RunModel& run) {
  return [&run](size_t p, const ProcessItems& each) {
    std::map<std::tuple<uint64_t, uint32_t, uint64_t, OpSide>, uint32_t> keys;  // dense, within the file
    std::string error;  // the loader has said what it could not read
    const ProcessInfo& process = run.processes[p];
    OwnRecordSinks sinks;
    sinks.op = [&](const OwnOp& op) {
      if (!run.window.contains(process.utcOfCpu(op.cpu_start_ns))) return;
      const uint32_t key = keys.try_emplace({op.comm_id, op.func, op.bytes, op.side}, static_cast<uint32_t>(keys.size())).first->second;
      each.op(rankOp(op.cpu_start_ns, op.gpu_start_ns, op.gpu_end_ns, op.op_index, key, op.side, op.phase_path));
    };
    const LinearMap& to_gpu = process.gpu_from_cupti;
    if (to_gpu.valid && timelineOf(run, p).has_kernel_records) {
      sinks.compute = [&](const GpuInterval& k) { each.kernel({to_gpu.mapNs(k.start_ns), to_gpu.mapNs(k.end_ns), 0, k.stream}); };
    }
    readOwnRecords(process.path, sinks, error);
  };
}

std::vector<OverlapRow> computeOverlap(const RunModel& run, const StepRule& rule, const ProcessOpSource& source,
                                       unsigned threads, ProgressLine* progress, GapBusyTime* busy,
                                       std::vector<std::vector<PathExposure>>* exposed_by_path) {
  std::vector<OverlapRow> rows(run.processes.size());
  if (exposed_by_path != nullptr) exposed_by_path->assign(run.processes.size(), {});
  std::mutex progress_mutex;
  int done = 0;
  uint64_t bytes_done = 0;
  forEachProcess(run.processes.size(), threads, [&](size_t p) {
    rows[p] = overlapOfProcess(run, p, source, rule, nullptr, busy, exposed_by_path != nullptr ? &(*exposed_by_path)[p] : nullptr);
    if (progress == nullptr) return;
    std::lock_guard lock(progress_mutex);
    bytes_done += run.processes[p].file_bytes;
    progress->update(++done, bytes_done);
  });
  if (progress != nullptr) progress->done();
  return rows;
}

std::vector<OverlapRow> computeOverlap(const RunModel& run, const StepRule& rule) {
  return computeOverlap(run, rule, opsFromModel(run));
}

std::vector<std::vector<StepWindow>> stepWindows(const RunModel& run, const StepRule& rule) {
  std::vector<std::vector<StepWindow>> out(run.processes.size());
  const ProcessOpSource source = opsFromModel(run);
  for (size_t p = 0; p < run.processes.size(); ++p) overlapOfProcess(run, p, source, rule, &out[p]);
  return out;
}

}  // namespace commtrace::report
