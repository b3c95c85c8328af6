#include "tools/report/output/perfetto_export.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <tuple>
#include <vector>

#include "tools/report/analyses/op_metrics.h"
#include "tools/report/analyses/process_ops.h"
#include "tools/report/format.h"
#include "tools/report/output/json_stream.h"

namespace commtrace::report {
namespace {

// A process's GPU clock onto the trace's timeline, in whole nanoseconds. Relative to the
// process's first op so that durations keep nanosecond precision (a raw globaltimer value
// near 1.8e18 ns has 256 ns steps as a double). Monotonic, so slices that nest on the GPU
// clock still nest on the timeline, and printed from integers, so touching slices still touch.
struct TraceClock {
  bool aligned = false;
  double slope = 1.0;
  int64_t offset_ns = 0;  // where the process's first op lies on the timeline
  uint64_t base_ns = 0;   // the process's first op on its own clock
  int64_t at(uint64_t gpu_ns) const {
    return offset_ns + std::llround(slope * static_cast<double>(static_cast<int64_t>(gpu_ns - base_ns)));
  }
};

std::vector<TraceClock> traceClocks(const RunModel& run, const ClockAlignment& clocks) {
  auto mapped = [&](size_t p) { return p < clocks.ref_from_gpu.size() && clocks.ref_from_gpu[p].valid && run.processes[p].first_gpu_ns != 0; };
  double origin = INFINITY;  // the earliest aligned op: time 0 of the trace
  for (size_t p = 0; p < run.processes.size(); ++p)
    if (mapped(p)) origin = std::min(origin, clocks.ref_from_gpu[p].apply(static_cast<double>(run.processes[p].first_gpu_ns)));
  std::vector<TraceClock> out(run.processes.size());
  for (size_t p = 0; p < run.processes.size(); ++p) {
    TraceClock& c = out[p];
    c.base_ns = run.processes[p].first_gpu_ns;
    if (!mapped(p)) continue;
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

class TraceWriter {
 public:
  TraceWriter(const RunModel& run, const ClockAlignment& clocks, std::ostream& out)
      : run_(run), clocks_(traceClocks(run, clocks)), json_(out) {
    transfer_ns_.reserve(run.collectives.size());
    for (const CollInstance& c : run.collectives) transfer_ns_.push_back(transferNs(run, c));
    p2p_transfer_ns_ = transferTimes(run);
    for (const Communicator& c : run.comms) comm_ids_.push_back(fmt::hexId(c.id));
  }

  PerfettoStats write() {
    json_.raw("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
    const std::vector<std::vector<ProcessOp>> ops = opsByProcess(run_);
    for (size_t p = 0; p < run_.processes.size(); ++p) writeProcess(p, ops[p]);
    json_.raw("\n],\"otherData\":");
    writeOtherData();
    json_.raw("}\n");
    json_.flush();
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

  int pidOf(size_t p) const { return run_.processes[p].rank >= 0 ? run_.processes[p].rank : 1'000'000 + static_cast<int>(p); }

  // The start of an event object; the caller adds its remaining fields and the closing brace.
  void beginEvent(const char* ph, int pid, int tid, std::string_view name) {
    json_.raw(first_event_ ? "{\"ph\":\"" : ",\n{\"ph\":\"").raw(ph).raw("\",\"pid\":").num(pid).raw(",\"tid\":").num(tid).raw(",\"name\":").str(name);
    first_event_ = false;
  }

  template <class V>
  void metadata(int pid, int tid, std::string_view name, std::string_view key, const V& value) {
    beginEvent("M", pid, tid, name);
    json_.raw(",\"args\":");
    JsonObject(json_).field(key, value).close();
    json_.raw("}");
  }

  void writeProcessMetadata(size_t p) {
    const ProcessInfo& info = run_.processes[p];
    const int pid = pidOf(p);
    if (tids_handed_out_.insert({pid, 0}).second) {
      const std::string who = info.rank >= 0 ? "rank " + std::to_string(info.rank) : "unknown rank (" + info.path + ")";
      metadata(pid, 0, "process_name", "name", who + " (" + info.host + ")");
      metadata(pid, 0, "process_sort_index", "sort_index", pid);
    }
    if (!clocks_[p].aligned) {
      ++stats_.processes_not_aligned;
      metadata(pid, 0, "process_labels", "labels",
               "GPU clock not aligned: times from this process's first op (restart " + std::to_string(info.restart_count) + ")");
    }
  }

  int tidOf(size_t p, const Slice& s, size_t lane) {
    const int pid = pidOf(p);
    auto [it, inserted] = tids_.try_emplace(TrackKey{pid, s.kind, s.stream, lane}, 0);
    if (!inserted) return it->second;
    it->second = ++tids_handed_out_[pid];
    std::string name = s.kind == Slice::Kind::kCompute ? "compute kernels"
                       : s.kind == Slice::Kind::kPhase ? "NVTX ranges"
                       : s.stream != 0                 ? "stream " + fmt::hexId(s.stream)
                                                       : "stream (not recorded)";
    if (lane > 0) name += " (overlap " + std::to_string(lane) + ")";
    ++stats_.tracks;
    metadata(pid, it->second, "thread_name", "name", name);
    metadata(pid, it->second, "thread_sort_index", "sort_index", it->second);
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
      if (t.compute[i].end_ns > t.compute[i].start_ns) slices.push_back({t.compute[i].start_ns, t.compute[i].end_ns, Slice::Kind::kCompute, 0, {}, i});
    const LinearMap& gpu_from_cpu = run_.processes[p].gpu_from_cpu;
    if (!gpu_from_cpu.valid) return slices;  // NVTX ranges are on the CPU clock: no place on the GPU timeline
    auto toGpu = [&](uint64_t cpu_ns) { return static_cast<uint64_t>(std::max(0.0, gpu_from_cpu.apply(static_cast<double>(cpu_ns)))); };
    for (uint32_t i = 0; i < t.phases.size(); ++i) {
      const uint64_t start = toGpu(t.phases[i].cpu_start_ns), end = toGpu(t.phases[i].cpu_end_ns);
      if (end > start) slices.push_back({start, end, Slice::Kind::kPhase, 0, {}, i});
    }
    return slices;
  }

  void writeProcess(size_t p, const std::vector<ProcessOp>& ops) {
    writeProcessMetadata(p);
    std::vector<Slice> slices = slicesOf(p, ops);
    std::sort(slices.begin(), slices.end(), [](const Slice& a, const Slice& b) {
      return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;  // enclosing slices first
    });
    std::map<std::pair<Slice::Kind, uint64_t>, Lanes> lanes;
    for (const Slice& s : slices) writeSlice(p, s, tidOf(p, s, lanes[{s.kind, s.stream}].place(s.start_ns, s.end_ns)));
  }

  void writeSlice(size_t p, const Slice& s, int tid) {
    const int64_t ts = clocks_[p].at(s.start_ns), end = clocks_[p].at(s.end_ns);
    const auto [name, cat] = nameAndCategory(p, s);
    beginEvent("X", pidOf(p), tid, name);
    json_.raw(",\"cat\":\"").raw(cat).raw("\",\"ts\":").microseconds(ts).raw(",\"dur\":").microseconds(end - ts).raw(",\"args\":");
    JsonObject args(json_);
    if (s.kind == Slice::Kind::kPhase) args.field("depth", static_cast<int>(run_.timelines[p].phases[s.index].depth));
    else if (s.kind == Slice::Kind::kOp && s.op.isCollective()) collectiveArgs(s.op, args);
    else if (s.kind == Slice::Kind::kOp) p2pArgs(s.op, args);
    args.close();
    json_.raw("}");
    ++stats_.slices;
  }

  std::pair<std::string_view, const char*> nameAndCategory(size_t p, const Slice& s) const {
    if (s.kind == Slice::Kind::kCompute) return {"compute", "compute"};
    if (s.kind == Slice::Kind::kPhase) return {run_.name(run_.timelines[p].phases[s.index].name), "nvtx"};
    if (s.op.isCollective()) return {run_.name(run_.collectives[s.op.index].func), "collective"};
    return {s.op.slot == ProcessOp::kSendSide ? "Send" : "Recv", "p2p"};
  }

  void commArgs(uint32_t comm, JsonObject& args) const {
    args.field("comm", comm_ids_[comm]).field("comm_name", run_.name(run_.comms[comm].name));
  }

  // Bandwidth from the op's transfer time (its last-arriving member's duration), as the
  // bandwidth table computes it; wait_us is how long this member waited for the others.
  void collectiveArgs(const ProcessOp& op, JsonObject& args) const {
    const CollInstance& c = run_.collectives[op.index];
    const uint64_t duration = memberOf(run_, op).gpuDuration(), transfer = transfer_ns_[op.index];
    const int n = static_cast<int>(c.n_members);
    commArgs(c.comm, args);
    args.field("comm_rank", op.slot)
        .field("seq", c.seq)
        .field("op_index", c.op_index)
        .field("count", c.count)
        .field("bytes", c.bytes)
        .field("datatype", run_.name(c.datatype))
        .field("algo", run_.name(c.algo))
        .field("proto", run_.name(c.proto))
        .field("channels", static_cast<int>(c.n_channels));
    if (c.root >= 0) args.field("root", static_cast<int>(c.root));
    if (c.graph_captured) args.field("graph_captured", "yes");
    if (transfer == 0) return;
    const double algbw = gbPerS(static_cast<double>(ncclTestsBytes(run_.name(c.func), c.bytes, n)), transfer);
    args.field("transfer_us", static_cast<double>(transfer) / 1e3)
        .field("wait_us", static_cast<double>(duration - std::min(duration, transfer)) / 1e3)
        .field("algbw_gbs", algbw)
        .field("busbw_gbs", algbw * busBwFactor(run_.name(c.func), n));
  }

  void p2pArgs(const ProcessOp& op, JsonObject& args) const {
    const P2pTransfer& t = run_.transfers[op.index];
    const MemberView& peer = op.slot == ProcessOp::kSendSide ? t.recv : t.send;
    commArgs(t.comm, args);
    args.field("peer", peerRank(t.comm, peer))
        .field("api_func", run_.name(t.func))
        .field("op_index", t.op_index)
        .field("count", t.count)
        .field("bytes", t.bytes)
        .field("datatype", run_.name(t.datatype))
        .field("channels", static_cast<int>(t.n_channels));
    const uint64_t transfer = p2p_transfer_ns_[op.index];
    if (transfer > 0) args.field("transfer_us", static_cast<double>(transfer) / 1e3).field("algbw_gbs", gbPerS(static_cast<double>(t.bytes), transfer));
  }

  // The other side's global rank: from its file, else from the communicator; -1 unknown.
  int peerRank(uint32_t comm, const MemberView& peer) const {
    if (peer.process >= 0) return run_.processes[peer.process].rank;
    const std::vector<int>& ranks = run_.comms[comm].global_ranks;
    return peer.comm_rank >= 0 && static_cast<size_t>(peer.comm_rank) < ranks.size() ? ranks[peer.comm_rank] : -1;
  }

  void writeOtherData() {
    const std::string timeline =
        stats_.processes_not_aligned == 0
            ? "aligned: every process's GPU clock mapped onto the reference rank's; 0 = the earliest op"
            : std::to_string(stats_.processes_not_aligned) +
                  " processes not aligned (labelled): their times count from their own first op; the others are aligned";
    JsonObject(json_)
        .field("generator", std::string("commtrace ") + COMMTRACE_VERSION)
        .field("run", run_.dir)
        .field("timeline", timeline)
        .field("ops_without_gpu_times", stats_.ops_without_gpu_times)
        .close();
  }

  const RunModel& run_;
  std::vector<TraceClock> clocks_;
  std::vector<uint64_t> transfer_ns_;      // per collective instance
  std::vector<uint64_t> p2p_transfer_ns_;  // per transfer (transferTimes)
  std::vector<std::string> comm_ids_;  // per communicator, as printed
  JsonStream json_;
  bool first_event_ = true;
  std::map<int, int> tids_handed_out_;  // pid -> how many tids it has (a pid is named when first seen)
  std::map<TrackKey, int> tids_;
  PerfettoStats stats_;
};

}  // namespace

PerfettoStats writePerfettoTrace(const RunModel& run, const ClockAlignment& clocks, std::ostream& out) {
  return TraceWriter(run, clocks, out).write();
}

bool exportPerfetto(const RunModel& run, const ClockAlignment& clocks, const std::string& out_path, std::ostream& err, PerfettoStats* stats) {
  std::ofstream out(out_path, std::ios::binary | std::ios::trunc);
  if (!out) {
    err << "commtrace: " << out_path << ": cannot create it\n";
    return false;
  }
  const PerfettoStats written = writePerfettoTrace(run, clocks, out);
  out.close();
  if (!out) {
    err << "commtrace: " << out_path << ": write failed (disk full?)\n";
    return false;
  }
  if (stats != nullptr) *stats = written;
  return true;
}

}  // namespace commtrace::report
