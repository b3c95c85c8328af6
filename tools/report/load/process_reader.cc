#include "tools/report/load/process_reader.h"

#include <cstdio>
#include <sys/stat.h>

#include <algorithm>
#include <limits>

#include "tools/report/load/demangle.h"
#include "tools/report/load/kernel_clock_match.h"
#include "tools/report/load/linear_fit.h"
#include "tools/report/load/own_ops.h"
#include "tools/report/load/width_budget.h"

namespace commtrace::report {

ProcessReadOptions ProcessReadOptions::forWidth(size_t processes) {
  ProcessReadOptions options;
  options.gap_window = keptAtWidth(GpuGapTracker::kWindow, processes, GpuGapTracker::kFewestWindow);
  options.clock_probe_ops = keptAtWidth(KernelClockMatcher::kOpEndsBeforeKernels, processes, KernelClockMatcher::kFewestOpEndsBeforeKernels);
  return options;
}
namespace {

constexpr NameId kUnset = std::numeric_limits<NameId>::max();
constexpr size_t kMaxIssuesKept = 10;  // a badly damaged file reports one line per bad frame

MemberView viewOf(int process, uint64_t cpu_start, uint64_t cpu_end, uint64_t gpu_start, uint64_t gpu_end,
                  uint64_t stream) {
  MemberView v;
  v.process = process;
  v.cpu_start_ns = cpu_start;
  v.cpu_end_ns = cpu_end;
  v.gpu_start_ns = gpu_start;
  v.gpu_end_ns = gpu_end;
  v.stream = stream;
  return v;
}

}  // namespace

bool ProcessReader::open(const std::string& path, std::string& error, DescriptorPool* descriptors) {
  return reader_.open(path, error, descriptors) && opened();
}

bool ProcessReader::open(const std::string& name, std::shared_ptr<ByteSource> source, std::string& error) {
  return reader_.open(name, std::move(source), error) && opened();
}

bool ProcessReader::opened() {
  send_ = names_.intern("Send");
  consumed_ = reader_.offset();
  return true;
}

NameId ProcessReader::name(StringId id) {
  if (id >= name_of_.size()) name_of_.resize(id + 1, kUnset);
  if (name_of_[id] == kUnset) name_of_[id] = names_.intern(demangled(reader_.str(id)));
  return name_of_[id];
}

bool ProcessReader::next(RecordBatch& batch, DecodedChunk& chunk) {
  batch.process = process_;
  batch.comm_infos.clear();
  batch.colls.clear();
  batch.p2ps.clear();
  batch.in_flight.clear();
  batch.heartbeat_utc_ns = 0;
  const bool more = reader_.next(chunk);
  if (more) {
    tally_.add(chunk);
    batch.colls.reserve(tally_.records(RecordKind::kColl) - colls_before_);
    batch.p2ps.reserve(tally_.records(RecordKind::kP2p) - p2ps_before_);
    colls_before_ = tally_.records(RecordKind::kColl);
    p2ps_before_ = tally_.records(RecordKind::kP2p);
    // The reader returns a chunk's kinds in table order, comm infos and NVTX path nodes after
    // the ops that name them.
    const auto namesOps = [](RecordKind kind) { return kind == RecordKind::kCommInfo || kind == RecordKind::kPhasePath; };
    for (const RecordSlot& slot : chunk.records) {
      if (namesOps(slot.kind)) project(slot, batch);
    }
    for (const RecordSlot& slot : chunk.records) {
      if (!namesOps(slot.kind)) project(slot, batch);
    }
    if (gpu_gaps_) fillGpuGaps(batch);
  }
  const uint64_t at = more ? reader_.offset() : reader_.size();
  batch.file_bytes = at - consumed_;
  consumed_ = at;
  const auto noteCpuSpan = [&](const MemberView& v) {
    if (v.cpu_start_ns != 0) first_cpu_ns_ = first_cpu_ns_ == 0 ? v.cpu_start_ns : std::min(first_cpu_ns_, v.cpu_start_ns);
    last_cpu_ns_ = std::max(last_cpu_ns_, v.cpu_end_ns);
  };
  for (const CollRow& r : batch.colls) noteCpuSpan(r.view);
  for (const P2pRow& r : batch.p2ps) noteCpuSpan(r.view);
  batch.position_ns = utcOf(last_cpu_ns_);
  batch.closed = closed();
  batch.dropped_records = tally_.droppedRingFull() + tally_.droppedSinkFailed();
  return more;
}

void ProcessReader::fillGpuGaps(RecordBatch& batch) {
  std::vector<MemberView*> chunk_ops;  // freed with the chunk: every file of a run is open at once
  chunk_ops.reserve(batch.colls.size() + batch.p2ps.size());
  for (CollRow& r : batch.colls) chunk_ops.push_back(&r.view);
  for (P2pRow& r : batch.p2ps) chunk_ops.push_back(&r.view);
  gaps_.fill(chunk_ops);
}

void ProcessReader::project(const RecordSlot& slot, RecordBatch& batch) {
  switch (slot.kind) {
    case RecordKind::kCommInfo: {
      const CommInfoRecord& c = slot.payload.comm_info;
      batch.comm_infos.push_back({c.comm_id, name(c.comm_name), c.n_ranks, c.rank, c.global_rank, c.n_nodes});
      break;
    }
    case RecordKind::kColl: {
      const CollRecord& c = slot.payload.coll;
      CollRow row{c.comm_id, c.seq, c.op_index, c.count, c.bytes, name(c.func), name(c.datatype), name(c.algo),
                  name(c.proto), c.root, c.n_channels, c.graph_captured != 0,
                  viewOf(process_, c.cpu_start_ns, c.cpu_end_ns, c.gpu_start_ns, c.gpu_end_ns, c.stream)};
      noteGpuTimes(row.view);
      row.path = notePath(c.phase_path, c.bytes, row.view, false);
      batch.colls.push_back(row);
      break;
    }
    case RecordKind::kP2p: {
      const P2pRecord& p = slot.payload.p2p;
      const std::string_view func = reader_.str(p.func);
      P2pRow row{p.comm_id, p.op_index, p.count, p.bytes, p.parent_func != 0 ? name(p.parent_func) : send_,
                 name(p.datatype), p.peer, func != "Recv", p.n_channels,
                 viewOf(process_, p.cpu_start_ns, p.cpu_end_ns, p.gpu_start_ns, p.gpu_end_ns, p.stream)};
      noteGpuTimes(row.view);
      row.path = notePath(p.phase_path, p.bytes, row.view, NamePool::isCallPiece(row.api_func));
      batch.p2ps.push_back(row);
      break;
    }
    case RecordKind::kKernelActivity:
      addKernel(slot.payload.kernel_activity);
      break;
    case RecordKind::kPhaseRange: {
      const PhaseRangeRecord& r = slot.payload.phase_range;
      phases_.add({name(r.name), r.cpu_start_ns, r.cpu_end_ns, r.depth}, reader_.str(r.name), reader_.str(r.domain));
      break;
    }
    case RecordKind::kClockSample: {
      const ClockSampleRecord& s = slot.payload.clock_sample;
      if (s.gpu_ns != 0) cpu_gpu_samples_.emplace_back(s.monotonic_ns, s.gpu_ns);
      if (s.gpu_ns != 0 && s.cupti_ns != 0) cupti_gpu_samples_.emplace_back(s.cupti_ns, s.gpu_ns);
      if (s.cupti_ns != 0) cpu_cupti_samples_.emplace_back(s.monotonic_ns, s.cupti_ns);
      batch.heartbeat_utc_ns = std::max(batch.heartbeat_utc_ns, s.realtime_ns);
      heartbeat_utc_ns_ = std::max(heartbeat_utc_ns_, s.realtime_ns);
      break;
    }
    case RecordKind::kInFlight: {
      const InFlightRecord& f = slot.payload.in_flight;
      batch.in_flight.push_back({f.comm_id, f.op_index, f.seq, f.cpu_start_ns != 0 ? utcOf(f.cpu_start_ns) : 0,
                                 utcOf(f.cpu_seen_ns), name(f.func), f.peer, f.in_flight});
      break;
    }
    case RecordKind::kApiSpan: {
      // The CUDA runtime calls the preload face times; its NCCL API spans no analysis reads yet.
      const ApiSpanRecord& a = slot.payload.api_span;
      if (!window_.contains(utcOf(a.cpu_start_ns))) break;
      cuda_sync_.add(reader_.str(a.name), a.stream, a.cpu_start_ns, a.cpu_end_ns, a.result != 0);
      break;
    }
    case RecordKind::kProxyStep: {
      const ProxyStepRecord& step = slot.payload.proxy_step;
      if (window_.contains(utcOf(step.cpu_start_ns))) proxy_wire_.add(step);
      break;
    }
    case RecordKind::kPhasePath: {
      const PhasePathRecord& n = slot.payload.phase_path;
      paths_.define(n.id, n.parent, reader_.str(n.name));
      break;
    }
    case RecordKind::kStackFrames: stacks_.addFrames(slot.payload.stack_frames); break;
    case RecordKind::kStackSample:
      if (window_.contains(utcOf(slot.payload.stack_sample.cpu_start_ns))) stacks_.addSample(slot.payload.stack_sample);
      break;
    case RecordKind::kModule: {
      const ModuleRecord& m = slot.payload.module;
      stacks_.addModule(m, reader_.str(m.path), reader_.str(m.build_id));
      break;
    }
    case RecordKind::kKernelCh:     // per-channel detail no analysis joins yet
    case RecordKind::kDropSummary:  // read by the run's tally (trace_tally.h), not per op
      break;
  }
}

// Every kernel, memcpy and memset is tallied by name; compute kernels (isComputeKernel) are
// counted, and kept where the run is held whole; NCCL's kernel ends tie CUPTI's clock to the GPU's.
void ProcessReader::addKernel(const KernelActivityRecord& k) {
  const uint64_t duration = k.end_ns > k.start_ns ? k.end_ns - k.start_ns : 0;
  const NameId kernel = name(k.name);
  KernelTally& tally = kernel_tally_.try_emplace(kernel, KernelTally{.name = kernel, .activity = k.activity}).first->second;
  ++tally.count;
  tally.total_ns += duration;
  tally.max_ns = std::max(tally.max_ns, duration);
  if (k.activity != 1) return;
  has_kernel_records_ = true;
  const std::string_view text = reader_.str(k.name);
  if (isComputeKernel(k, text)) {
    ++compute_kernels_;
    if (keep_compute_) compute_cupti_.push_back({k.start_ns, k.end_ns, kernel, k.stream_id});
  } else if (duration != 0 && clock_match_) {
    clock_match_->addKernelEnd(k.end_ns);
  }
}

// Ops in the window only, as every per-process tally.
NameId ProcessReader::notePath(uint32_t path, uint64_t bytes, const MemberView& v, bool call_piece) {
  if (window_.contains(utcOf(v.cpu_start_ns))) paths_.addOp(path, bytes, v.gpu_start_ns, v.gpu_end_ns, call_piece);
  return path == 0 ? 0 : paths_.nameOf(path, [this](std::string_view name) { return names_.intern(name); });
}

void ProcessReader::noteGpuTimes(const MemberView& v) {
  if (v.gpu_start_ns != 0 && (first_gpu_ns_ == 0 || v.gpu_start_ns < first_gpu_ns_)) first_gpu_ns_ = v.gpu_start_ns;
  last_gpu_ns_ = std::max(last_gpu_ns_, v.gpu_end_ns);
  if (v.gpu_end_ns != 0 && clock_match_) clock_match_->addOpEnd(v.gpu_end_ns);
}

uint64_t ProcessReader::utcOf(uint64_t cpu_ns) const { return cpuToUtc(cpu_ns, utcMinusCpu(reader_.header())); }

int64_t utcMinusCpu(const trace::v1::FileHeader& h) {
  return static_cast<int64_t>(h.start_realtime_ns() - h.start_monotonic_ns());
}

void describeProcess(const trace::v1::FileHeader& h, const std::string& path, ProcessInfo& info) {
  info.path = path;
  // A damaged header frame reads as an empty header (format_version 0): nothing in it is known.
  const bool header_known = h.format_version() != 0;
  // NCCL groups ranks into hosts by NCCL_HOSTID when it is set, so the report does too.
  info.host = h.nccl_host_id().empty() ? h.host() : h.nccl_host_id();
  info.pid = h.pid();
  info.rank = header_known ? h.rank() : -1;
  info.local_rank = header_known ? h.local_rank() : -1;
  info.world_size = header_known ? h.world_size() : -1;
  info.job_id = h.job_id();
  info.restart_count = h.restart_count();
  info.start_utc_ns = h.start_realtime_ns();
  info.exit_unseen = h.exit_unseen();
  info.utc_minus_cpu_ns = utcMinusCpu(h);
}

// GPU readings taken with the others, where a process has them; else CUPTI's clock tied to the
// GPU's through NCCL's kernels, and the CPU's through CUPTI's.
void ProcessReader::mapClocks(ProcessInfo& info) {
  info.gpu_from_cupti = fitClockMap(cupti_gpu_samples_);
  const KernelClockMatch match = clock_match_ ? clock_match_->finish() : KernelClockMatch{};
  if (!info.gpu_from_cupti.valid && match.kernels != 0) {
    info.gpu_from_cupti = fitClockMap(match.pairs);
    info.cupti_match = {match.kernels, match.matched, rmsResidual(match.pairs, info.gpu_from_cupti)};
  }
  info.gpu_from_cpu = fitClockMap(cpu_gpu_samples_);
  if (!info.gpu_from_cpu.valid && info.gpu_from_cupti.valid && !cpu_cupti_samples_.empty()) {
    std::vector<std::pair<uint64_t, uint64_t>> cpu_gpu;
    for (const auto& [cpu, cupti] : cpu_cupti_samples_) {
      cpu_gpu.emplace_back(cpu, info.gpu_from_cupti.mapNs(cupti));
    }
    info.gpu_from_cpu = fitClockMap(cpu_gpu);
  }
}

// An open file modified well after its last chunk was written is no live process's file: a
// copy gone wrong or a truncated file read as "still being written", with 0 damaged, while its
// rank contributed nothing past the cut.
void ProcessReader::noteCutShort(ProcessInfo& info) {
  if (info.file_state != ProcessInfo::FileState::kOpen || !info.modifiedAfterItsWriter()) return;
  info.damaged = true;
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.1f", static_cast<double>(info.modified_utc_ns - info.writtenUtc()) / 1e9);
  info.issues.push_back("commtrace: " + info.path + ": modified " + seconds + " s after " +
                        (info.heartbeat_utc_ns != 0 ? "the last chunk it holds was written" : "it was begun (it holds no whole chunk)") +
                        (info.torn_tail ? ", and it ends inside a frame" : "") +
                        ": cut short or changed after its writer stopped (a copy gone wrong, a full disk), not being written; "
                        "what it holds is read");
}

void ProcessReader::finish(ProcessInfo& info, ProcessTimeline& timeline) {
  describeProcess(reader_.header(), reader_.path(), info);
  info.records = tally_.records();
  info.dropped_records = tally_.droppedRingFull() + tally_.droppedSinkFailed();
  info.untracked_events = tally_.untracked();
  info.damaged = !reader_.issues().empty();  // a torn tail is an issue unless the file is open: the chunk being written
  info.file_state = reader_.state() == TraceReader::State::kClosed ? ProcessInfo::FileState::kClosed
                    : reader_.state() == TraceReader::State::kOpen ? ProcessInfo::FileState::kOpen
                                                                   : ProcessInfo::FileState::kUnknown;
  info.flush_period_ms = reader_.header().flush_period_ms();
  info.heartbeat_utc_ns = heartbeat_utc_ns_;
  info.torn_tail = reader_.tornTail();
  struct stat st{};
  if (stat(info.path.c_str(), &st) == 0)
    info.modified_utc_ns = static_cast<uint64_t>(st.st_mtim.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(st.st_mtim.tv_nsec);
  for (size_t i = 0; i < reader_.issues().size() && i < kMaxIssuesKept; ++i) {
    info.issues.push_back(reader_.issues()[i].message);
  }
  if (reader_.issues().size() > kMaxIssuesKept) {
    info.issues.push_back("commtrace: " + info.path + ": " + std::to_string(reader_.issues().size() - kMaxIssuesKept) +
                          " more damaged places not listed");
  }
  noteCutShort(info);
  mapClocks(info);
  info.file_bytes = reader_.size();
  info.first_op_utc_ns = utcOf(first_cpu_ns_);
  info.last_op_utc_ns = utcOf(last_cpu_ns_);
  info.first_gpu_ns = first_gpu_ns_;
  info.last_gpu_ns = last_gpu_ns_;

  timeline.has_kernel_records = has_kernel_records_;
  for (const auto& [id, tally] : kernel_tally_) timeline.kernels.push_back(tally);
  std::sort(timeline.kernels.begin(), timeline.kernels.end(), [](const KernelTally& a, const KernelTally& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
  });
  if (info.gpu_from_cupti.valid) {
    for (const GpuInterval& k : compute_cupti_)
      timeline.compute.push_back({info.gpu_from_cupti.mapNs(k.start_ns), info.gpu_from_cupti.mapNs(k.end_ns), k.name, k.stream});
  } else {
    timeline.unmapped_kernels = compute_kernels_;
  }
  std::sort(timeline.compute.begin(), timeline.compute.end(),
            [](const GpuInterval& a, const GpuInterval& b) { return a.start_ns < b.start_ns; });
  timeline.phases = phases_.take();
  timeline.cuda_sync = std::move(cuda_sync_);
  timeline.proxy_wire = std::move(proxy_wire_);
  timeline.comm_by_path =
      paths_.finish([this](std::string_view path) { return names_.intern(path); }, &timeline.path_names, window_.sharded());
  StackTally::Finished stacks = stacks_.finish([this](std::string_view name) { return names_.intern(name); }, reader_.path() + ".perf-map");
  timeline.comm_by_stack = std::move(stacks.stacks);
  timeline.python_without_perf_map = std::move(stacks.python_without_perf_map);
}

}  // namespace commtrace::report
