#include "tools/report/output/perfetto_export.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "tools/report/analyses/op_metrics.h"
#include "tools/report/analyses/overlap.h"
#include "tools/report/analyses/process_ops.h"
#include "tools/report/format.h"
#include "tools/report/load/own_ops.h"
#include "tools/report/output/gzip_stream.h"
#include "tools/report/output/perfetto_json.h"
#include "tools/report/output/perfetto_proto.h"

namespace commtrace::report {
namespace {

// A process's GPU clock onto the trace's timeline, in whole nanoseconds. Relative to the
// process's earliest event so that durations keep nanosecond precision (a raw globaltimer value
// near 1.8e18 ns has 256 ns steps as a double). Monotonic, so slices that nest on the GPU
// clock still nest on the timeline, and printed from integers, so touching slices still touch.
struct TraceClock {
  bool aligned = false;
  double slope = 1.0;
  int64_t offset_ns = 0;  // where the process's earliest event lies on the timeline
  uint64_t base_ns = 0;   // the process's earliest event on its own clock
  int64_t at(uint64_t gpu_ns) const {
    return offset_ns + std::llround(slope * static_cast<double>(static_cast<int64_t>(gpu_ns - base_ns)));
  }
};

// The earliest GPU time of a process's events: its first op, compute kernel or NVTX range.
uint64_t earliestGpuNs(const RunModel& run, size_t p) {
  uint64_t earliest = run.processes[p].first_gpu_ns;
  auto keep = [&](uint64_t ns) { earliest = earliest == 0 ? ns : std::min(earliest, ns); };
  if (p >= run.timelines.size()) return earliest;
  const ProcessTimeline& t = run.timelines[p];
  if (!t.compute.empty()) keep(t.compute.front().start_ns);
  const LinearMap& gpu_from_cpu = run.processes[p].gpu_from_cpu;
  if (!t.phases.empty() && gpu_from_cpu.valid) keep(gpu_from_cpu.mapNs(t.phases.front().cpu_start_ns));
  return earliest;
}

std::vector<TraceClock> traceClocks(const RunModel& run, const ClockAlignment& clocks) {
  std::vector<TraceClock> out(run.processes.size());
  auto mapped = [&](size_t p) { return p < clocks.ref_from_gpu.size() && clocks.ref_from_gpu[p].valid && out[p].base_ns != 0; };
  for (size_t p = 0; p < run.processes.size(); ++p) out[p].base_ns = earliestGpuNs(run, p);
  double origin = INFINITY;  // the earliest aligned event: time 0 of the trace
  for (size_t p = 0; p < run.processes.size(); ++p)
    if (mapped(p)) origin = std::min(origin, clocks.ref_from_gpu[p].apply(static_cast<double>(out[p].base_ns)));
  for (size_t p = 0; p < run.processes.size(); ++p) {
    if (!mapped(p)) continue;
    TraceClock& c = out[p];
    const LinearMap& m = clocks.ref_from_gpu[p];
    c.aligned = true;
    c.slope = m.slope;
    c.offset_ns = std::llround(m.apply(static_cast<double>(c.base_ns)) - origin);
  }
  return out;
}

// What one slice shows. Ops keep their ProcessOp; compute kernels and NVTX ranges their index.
struct Slice {
  enum class Kind { kOp, kCompute, kPhase };
  uint64_t start_ns = 0;  // the process's GPU clock
  uint64_t end_ns = 0;
  Kind kind = Kind::kOp;
  uint64_t stream = 0;  // tracks: ops per stream; compute and NVTX one track each
  ProcessOp op;
  uint32_t index = 0;
};

// Perfetto draws slices of one track only when they nest, so a slice that would overlap the
// open ones without nesting goes to another lane (a second track of the same stream).
class Lanes {
 public:
  // Slices must come in (start ascending, end descending) order.
  size_t place(uint64_t start, uint64_t end) {
    for (size_t lane = 0;; ++lane) {
      if (lane == open_.size()) open_.emplace_back();
      auto& stack = open_[lane];
      while (!stack.empty() && stack.back().second <= start) stack.pop_back();
      if (stack.empty() || (stack.back().first <= start && end <= stack.back().second)) {
        stack.emplace_back(start, end);
        return lane;
      }
    }
  }

 private:
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> open_;  // per lane: the open slices
};

// Which slices of a process the filter keeps: its rank, its steps' span on its own GPU clock,
// the window on the trace's timeline.
class SliceFilter {
 public:
  SliceFilter(const RunModel& run, const ExportFilter& filter) : filter_(filter) {
    if (filter.steps) steps_ = stepWindows(run, filter.step_rule);
  }
  bool keepsRank(int rank) const {
    return filter_.ranks.empty() || std::find(filter_.ranks.begin(), filter_.ranks.end(), rank) != filter_.ranks.end();
  }
  // The span of the chosen steps on the process's GPU clock; nullopt: the process has none of them.
  std::optional<std::pair<uint64_t, uint64_t>> stepSpan(size_t p) const {
    if (!filter_.steps) return std::pair<uint64_t, uint64_t>{0, UINT64_MAX};
    const auto [first, last] = *filter_.steps;
    const std::vector<StepWindow>& steps = steps_[p];
    if (first < 0 || static_cast<size_t>(first) >= steps.size()) return std::nullopt;
    const size_t end = std::min(static_cast<size_t>(std::max(first, last)), steps.size() - 1);
    return std::pair{steps[static_cast<size_t>(first)].start_ns, steps[end].end_ns};
  }
  bool keepsTimes(int64_t start, int64_t end) const {
    return (!filter_.from_ns || end > *filter_.from_ns) && (!filter_.to_ns || start < *filter_.to_ns);
  }

 private:
  const ExportFilter& filter_;
  std::vector<std::vector<StepWindow>> steps_;
};

class TraceWriter {
 public:
  TraceWriter(const RunModel& run, const ClockAlignment& clocks, const ExportFilter& filter, TraceFormat& format)
      : run_(run), clocks_(traceClocks(run, clocks)), filter_(run, filter), format_(format) {
    transfer_ns_.reserve(run.collectives.size());
    for (const CollInstance& c : run.collectives) transfer_ns_.push_back(transferNs(run, c));
    p2p_transfer_ns_ = transferTimes(run);
    for (const Communicator& c : run.comms) comm_ids_.push_back(fmt::hexId(c.id));
    flow_slices_.resize(run.collectives.size() + run.transfers.size());
    nameProcesses();
  }

  PerfettoStats write() {
    const std::vector<std::vector<ProcessOp>> ops = opsByProcess(run_);
    for (size_t p = 0; p < run_.processes.size(); ++p) {
      if (filter_.keepsRank(run_.processes[p].rank)) writeProcess(p, ops[p]);
    }
    for (uint8_t n : flow_slices_) stats_.flows += n >= 2;
    writeAbout();
    return stats_;
  }

 private:
  struct TrackKey {
    int pid;
    Slice::Kind kind;
    uint64_t stream;
    size_t lane;
    auto operator<=>(const TrackKey&) const = default;
  };
  struct ProcessName {
    std::string name, note;
    bool written = false;
  };

  int pidOf(size_t p) const { return run_.processes[p].rank >= 0 ? run_.processes[p].rank : 1'000'000 + static_cast<int>(p); }

  // One name per pid (a restarted rank's files share it); a note for each file whose clock
  // could not be aligned.
  void nameProcesses() {
    for (size_t p = 0; p < run_.processes.size(); ++p) {
      const ProcessInfo& info = run_.processes[p];
      auto [it, first] = process_names_.try_emplace(pidOf(p));
      if (first) it->second.name = (info.rank >= 0 ? "rank " + std::to_string(info.rank) : "unknown rank (" + info.path + ")") + " (" + info.host + ")";
      if (clocks_[p].aligned) continue;
      it->second.note += (it->second.note.empty() ? "" : "; ") + std::string("GPU clock not aligned: times from this process's earliest event (restart ") +
                         std::to_string(info.restart_count) + ")";
    }
  }

  void writeProcessOnce(size_t p) {
    ProcessName& n = process_names_.at(pidOf(p));
    if (n.written) return;
    n.written = true;
    ++stats_.processes;
    format_.process(pidOf(p), n.name, n.note);
  }

  int tidOf(size_t p, const Slice& s, size_t lane) {
    const int pid = pidOf(p);
    auto [it, inserted] = tids_.try_emplace(TrackKey{pid, s.kind, s.stream, lane}, 0);
    if (!inserted) return it->second;
    it->second = ++tids_handed_out_[pid];
    std::string name = s.kind == Slice::Kind::kCompute ? "compute kernels, CUDA stream " + std::to_string(s.stream)
                       : s.kind == Slice::Kind::kPhase ? "NVTX ranges"
                       : s.stream != 0                 ? "stream " + fmt::hexId(s.stream)
                                                       : "stream (not recorded)";
    if (lane > 0) name += " (overlap " + std::to_string(lane) + ")";
    ++stats_.tracks;
    format_.track(pid, it->second, name);
    return it->second;
  }

  std::vector<Slice> slicesOf(size_t p, const std::vector<ProcessOp>& ops) {
    std::vector<Slice> slices;
    slices.reserve(ops.size());
    for (const ProcessOp& op : ops) {
      const MemberView& m = memberOf(run_, op);
      if (m.gpuDuration() == 0) {
        ++stats_.ops_without_gpu_times;
        continue;
      }
      slices.push_back({m.gpu_start_ns, m.gpu_end_ns, Slice::Kind::kOp, m.stream, op, 0});
    }
    if (p >= run_.timelines.size()) return slices;
    const ProcessTimeline& t = run_.timelines[p];
    for (uint32_t i = 0; i < t.compute.size(); ++i)
      if (t.compute[i].end_ns > t.compute[i].start_ns)
        slices.push_back({t.compute[i].start_ns, t.compute[i].end_ns, Slice::Kind::kCompute, t.compute[i].stream, {}, i});
    const LinearMap& gpu_from_cpu = run_.processes[p].gpu_from_cpu;
    if (!gpu_from_cpu.valid) return slices;  // NVTX ranges are on the CPU clock: no place on the GPU timeline
    for (uint32_t i = 0; i < t.phases.size(); ++i) {
      const uint64_t start = gpu_from_cpu.mapNs(t.phases[i].cpu_start_ns), end = gpu_from_cpu.mapNs(t.phases[i].cpu_end_ns);
      if (end > start) slices.push_back({start, end, Slice::Kind::kPhase, 0, {}, i});
    }
    return slices;
  }

  // Drops the slices the filter does not keep; false when none is left.
  bool filterSlices(size_t p, std::vector<Slice>& slices) {
    const size_t before = slices.size();
    const auto span = filter_.stepSpan(p);
    if (!span) {
      ++stats_.processes_without_steps;
      stats_.slices_filtered_out += before;
      return false;
    }
    std::erase_if(slices, [&](const Slice& s) {
      return s.end_ns <= span->first || s.start_ns >= span->second || !filter_.keepsTimes(clocks_[p].at(s.start_ns), clocks_[p].at(s.end_ns));
    });
    stats_.slices_filtered_out += before - slices.size();
    return !slices.empty();
  }

  // The NVTX path each of the process's ops was issued under, by its CPU start, read back
  // from its file (the run held whole keeps no op's path); empty where none ran under a range.
  void readOpPaths(size_t p) {
    op_paths_.clear();
    if (p >= run_.timelines.size() || run_.timelines[p].path_names.empty()) return;
    const std::unordered_map<uint32_t, NameId>& names = run_.timelines[p].path_names;
    OwnRecordSinks sinks;
    sinks.op = [&](const OwnOp& op) {
      if (const auto name = names.find(op.phase_path); op.phase_path != 0 && name != names.end()) op_paths_.emplace(op.cpu_start_ns, name->second);
    };
    std::string error;  // the loader has said what it could not read
    readOwnRecords(run_.processes[p].path, sinks, error);
  }

  void pathArg(const MemberView& m) {
    if (const auto path = op_paths_.find(m.cpu_start_ns); path != op_paths_.end()) args_.push_back({"nvtx_path", run_.name(path->second)});
  }

  void writeProcess(size_t p, const std::vector<ProcessOp>& ops) {
    std::vector<Slice> slices = slicesOf(p, ops);
    if (!filterSlices(p, slices)) return;
    readOpPaths(p);
    if (!clocks_[p].aligned) ++stats_.processes_not_aligned;
    writeProcessOnce(p);
    std::sort(slices.begin(), slices.end(), [](const Slice& a, const Slice& b) {
      return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;  // enclosing slices first
    });
    std::map<std::pair<Slice::Kind, uint64_t>, Lanes> lanes;
    for (const Slice& s : slices) writeSlice(p, s, tidOf(p, s, lanes[{s.kind, s.stream}].place(s.start_ns, s.end_ns)));
    format_.processDone(pidOf(p));
  }

  void writeSlice(size_t p, const Slice& s, int tid) {
    args_.clear();
    uint64_t flow = 0;
    std::string_view name = "compute", category = "compute";
    if (s.kind == Slice::Kind::kCompute) {
      const NameId kernel = run_.timelines[p].compute[s.index].name;
      if (kernel != 0) name = run_.name(kernel);
    } else if (s.kind == Slice::Kind::kPhase) {
      name = run_.name(run_.timelines[p].phases[s.index].name), category = "nvtx";
      args_.push_back({"depth", int64_t{run_.timelines[p].phases[s.index].depth}});
    } else if (s.kind == Slice::Kind::kOp && s.op.isCollective()) {
      name = run_.name(run_.collectives[s.op.index].func), category = "collective";
      collectiveArgs(s.op);
      pathArg(memberOf(run_, s.op));
      flow = joinFlow(s.op.index);
    } else if (s.kind == Slice::Kind::kOp) {
      name = s.op.slot == ProcessOp::kSendSide ? "Send" : "Recv", category = "p2p";
      p2pArgs(s.op);
      pathArg(memberOf(run_, s.op));
      flow = joinFlow(run_.collectives.size() + s.op.index);
    }
    format_.slice(pidOf(p), tid, clocks_[p].at(s.start_ns), clocks_[p].at(s.end_ns), name, category, args_, flow);
    ++stats_.slices;
  }

  // Flow ids: collective instance i is i + 1, transfer t is collectives + t + 1.
  uint64_t joinFlow(size_t index) {
    uint8_t& n = flow_slices_[index];
    n = static_cast<uint8_t>(std::min(n + 1, 2));
    return index + 1;
  }

  void commArgs(uint32_t comm) {
    args_.push_back({"comm", std::string_view(comm_ids_[comm])});
    args_.push_back({"comm_name", run_.name(run_.comms[comm].name)});
  }

  // Bandwidth from the op's transfer time (its last-arriving member's duration), as the
  // bandwidth table computes it; wait_us is how long this member waited for the others.
  void collectiveArgs(const ProcessOp& op) {
    const CollInstance& c = run_.collectives[op.index];
    const uint64_t duration = memberOf(run_, op).gpuDuration(), transfer = transfer_ns_[op.index];
    const int n = static_cast<int>(c.n_members);
    commArgs(c.comm);
    args_.insert(args_.end(), {{"comm_rank", int64_t{op.slot}},
                               {"seq", c.seq},
                               {"op_index", c.op_index},
                               {"count", c.count},
                               {"bytes", c.bytes},
                               {"datatype", run_.name(c.datatype)},
                               {"algo", run_.name(c.algo)},
                               {"proto", run_.name(c.proto)},
                               {"channels", int64_t{c.n_channels}}});
    if (c.root >= 0) args_.push_back({"root", int64_t{c.root}});
    if (c.graph_captured) args_.push_back({"graph_captured", std::string_view("yes")});
    if (transfer == 0) return;
    const double algbw = gbPerS(static_cast<double>(ncclTestsBytes(run_.name(c.func), c.bytes, n)), transfer);
    args_.insert(args_.end(), {{"transfer_us", static_cast<double>(transfer) / 1e3},
                               {"wait_us", static_cast<double>(duration - std::min(duration, transfer)) / 1e3},
                               {"algbw_gbs", algbw},
                               {"busbw_gbs", algbw * busBwFactor(run_.name(c.func), n)}});
  }

  void p2pArgs(const ProcessOp& op) {
    const P2pTransfer& t = run_.transfers[op.index];
    const MemberView& peer = op.slot == ProcessOp::kSendSide ? t.recv : t.send;
    commArgs(t.comm);
    args_.insert(args_.end(), {{"peer", int64_t{peerRank(t.comm, peer)}},
                               {"api_func", run_.name(t.func)},
                               {"op_index", t.op_index},
                               {"count", t.count},
                               {"bytes", t.bytes},
                               {"datatype", run_.name(t.datatype)},
                               {"channels", int64_t{t.n_channels}}});
    const uint64_t transfer = p2p_transfer_ns_[op.index];
    if (transfer > 0)
      args_.insert(args_.end(), {{"transfer_us", static_cast<double>(transfer) / 1e3}, {"algbw_gbs", gbPerS(static_cast<double>(t.bytes), transfer)}});
  }

  // The other side's global rank: from its file, else from the communicator; -1 unknown.
  int peerRank(uint32_t comm, const MemberView& peer) const {
    if (peer.process >= 0) return run_.processes[peer.process].rank;
    const std::vector<int>& ranks = run_.comms[comm].global_ranks;
    return peer.comm_rank >= 0 && static_cast<size_t>(peer.comm_rank) < ranks.size() ? ranks[peer.comm_rank] : -1;
  }

  void writeAbout() {
    const std::string timeline =
        stats_.processes_not_aligned == 0
            ? "aligned: every process's GPU clock mapped onto the reference rank's; 0 = the earliest event"
            : std::to_string(stats_.processes_not_aligned) +
                  " processes not aligned (labelled): their times count from their own earliest event; the others are aligned";
    const std::string generator = std::string("commtrace ") + COMMTRACE_VERSION;
    const TraceArg about[] = {{"generator", std::string_view(generator)},
                              {"run", std::string_view(run_.dir)},
                              {"timeline", std::string_view(timeline)},
                              {"ops_without_gpu_times", stats_.ops_without_gpu_times},
                              {"slices_filtered_out", stats_.slices_filtered_out}};
    format_.finish(about);
  }

  const RunModel& run_;
  std::vector<TraceClock> clocks_;
  SliceFilter filter_;
  TraceFormat& format_;
  std::vector<uint64_t> transfer_ns_;      // per collective instance
  std::vector<uint64_t> p2p_transfer_ns_;  // per transfer (transferTimes)
  std::vector<std::string> comm_ids_;      // per communicator, as printed
  std::vector<uint8_t> flow_slices_;       // per flow id - 1: slices drawn with it, up to 2
  std::vector<TraceArg> args_;             // the slice being written's
  std::unordered_map<uint64_t, NameId> op_paths_;  // the process being written's (readOpPaths)
  std::map<int, ProcessName> process_names_;
  std::map<int, int> tids_handed_out_;  // pid -> how many tids it has
  std::map<TrackKey, int> tids_;
  PerfettoStats stats_;
};

}  // namespace

std::unique_ptr<TraceFormat> makeTraceFormat(TraceEncoding encoding, std::ostream& out) {
  return encoding == TraceEncoding::kJson ? makeJsonTraceFormat(out) : makeProtoTraceFormat(out);
}

PerfettoStats writePerfettoTrace(const RunModel& run, const ClockAlignment& clocks, const PerfettoOptions& options,
                                 std::ostream& out) {
  const std::unique_ptr<TraceFormat> format = makeTraceFormat(options.encoding, out);
  return TraceWriter(run, clocks, options.filter, *format).write();
}

bool exportPerfetto(const RunModel& run, const ClockAlignment& clocks, const PerfettoOptions& options,
                    const std::string& out_path, std::ostream& err, PerfettoStats* stats) {
  std::ofstream out(out_path, std::ios::binary | std::ios::trunc);
  if (!out) {
    err << "commtrace: " << out_path << ": cannot create it\n";
    return false;
  }
  PerfettoStats written;
  if (options.gzip) {
    GzipOstream gz(out);
    written = writePerfettoTrace(run, clocks, options, gz);
    if (!gz.finish()) out.setstate(std::ios::badbit);
  } else {
    written = writePerfettoTrace(run, clocks, options, out);
  }
  out.close();
  if (!out) {
    err << "commtrace: " << out_path << ": write failed (disk full?)\n";
    return false;
  }
  if (stats != nullptr) *stats = written;
  return true;
}

}  // namespace commtrace::report
