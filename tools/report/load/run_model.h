// What `commtrace report` knows about a run once every file has been read: the processes,
// their communicators, and every op instance joined across the ranks that took part.
// The loader fills it chunk by chunk (a file is never held whole); what it keeps is a
// compact projection: one MemberView (48 bytes) per rank-op, one CollInstance per
// instance, one P2pTransfer per send/receive pair, and per-process compute intervals (unless
// the caller reads them from the files again: LoadOptions::keep_compute).
// The analyses read it and never see a RecordSlot.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/nccl_vocab.h"
#include "tools/report/load/cuda_sync_tally.h"
#include "tools/report/load/proxy_wire_tally.h"

namespace commtrace::report {

// Small interned names (funcs, algorithms, protocols, datatypes, comm names). 0 is "".
using NameId = uint32_t;

class NamePool {
 public:
  // NCCL's function names come first, as ids 1 .. nccl::kFuncCount in nccl::kFuncs order, so
  // that an analysis fed while loader threads still intern names can tell an op's func from
  // its id alone (ncclFunc), without reading the pool.
  NamePool();
  NameId intern(std::string_view s);
  std::string_view operator[](NameId id) const { return names_[id]; }
  // The id of s if interned, else 0 (never interns).
  NameId find(std::string_view s) const;
  size_t size() const { return names_.size(); }
  // The NCCL function a func id names; nullptr for a name NCCL does not use.
  static const nccl::FuncInfo* ncclFunc(NameId id) {
    return id >= 1 && id <= nccl::kFuncCount ? &nccl::kFuncs[id - 1] : nullptr;
  }
  // AlltoAll, Gather, Scatter: a transfer of such a func is a piece of a call (p2p_calls.h).
  static bool isCallPiece(NameId func) {
    const nccl::FuncInfo* f = ncclFunc(func);
    return f != nullptr && f->shape == nccl::FuncShape::kPieces;
  }

 private:
  std::vector<std::string> names_;
  std::unordered_map<std::string, NameId> index_;
};

// y = slope * x + intercept; fitted from (x, y) samples.
struct LinearMap {
  double slope = 1.0;
  double intercept = 0.0;
  bool valid = false;  // false: no samples; do not map
  double apply(double x) const { return slope * x + intercept; }
  // A clock reading mapped, as a reading of the other clock (0 where it would fall before 0).
  uint64_t mapNs(uint64_t t) const { return static_cast<uint64_t>(std::max(0.0, apply(static_cast<double>(t)))); }
};

// A CPU time (the process's CLOCK_MONOTONIC) as CLOCK_REALTIME, given their difference when
// recording started; 0 (not recorded) stays 0.
inline uint64_t cpuToUtc(uint64_t cpu_ns, int64_t utc_minus_cpu_ns) {
  return cpu_ns == 0 ? 0 : cpu_ns + static_cast<uint64_t>(utc_minus_cpu_ns);
}

// One trace file, i.e. one process (one rank, one restart).
// More ranks than any job has had: a size or rank past it in a record is not believed (a
// damaged or hostile file would size the report's tables by it).
inline constexpr int kMaxRanks = 1 << 20;

struct ProcessInfo {
  std::string path;
  uint64_t file_bytes = 0;  // the file's size when it was read
  std::string host;  // NCCL_HOSTID when the process had it set (NCCL's own host key), else gethostname()
  int64_t pid = 0;
  int rank = -1;  // global rank: from the header, else from a comm-info record's global_rank
  int local_rank = -1;
  int world_size = -1;
  std::string job_id;
  uint32_t restart_count = 0;
  uint64_t records = 0;
  uint64_t dropped_records = 0;  // ring full + write failed, from the last drop summaries
  uint64_t untracked_events = 0;  // events the plugin could not follow
  bool damaged = false;    // at least one frame skipped (CRC, decode), or a torn tail of a file not open
  std::vector<std::string> issues;  // the reader's "commtrace: FILE: offset N: ..." lines
  // As its writer left it when read (TraceReader::State): closed; open (its process still
  // writes it, or died without closing it: SIGKILL, a crash); unknown (a writer before 0.1).
  enum class FileState { kClosed, kOpen, kUnknown };
  FileState file_state = FileState::kUnknown;
  bool exit_unseen = false;      // FileHeader.exit_unseen: its writer could not see an _exit
  uint64_t modified_utc_ns = 0;  // the file's mtime when it was read
  uint32_t flush_period_ms = 0;  // how often its flusher wakes
  uint64_t heartbeat_utc_ns = 0;  // its latest clock sample (CLOCK_REALTIME): how far its writer got; 0: none
  bool torn_tail = false;         // it ends inside a frame
  // Modified well after the last chunk it holds was written: its writer writes a chunk, clock
  // sample first, at least every second, so its file's mtime trails its last sample by a flush;
  // a file cut short (a copy gone wrong, truncate, a full disk's partial copy) or rewritten by
  // anything else is modified later than that. Such an open file is no live process's.
  bool modifiedAfterItsWriter() const {
    const uint64_t slack_ns = 2'000'000'000ull + 2ull * flush_period_ms * 1'000'000ull;
    return writtenUtc() != 0 && modified_utc_ns > writtenUtc() + slack_ns;
  }
  // How far its writer got, as the file says: its latest clock sample, else its start.
  uint64_t writtenUtc() const { return std::max(heartbeat_utc_ns, start_utc_ns); }
  // Open and written to lately, as of utc_ns: its process is alive and recording. A live
  // flusher writes a chunk each period it has records for; an open file quiet for ten
  // periods (at least 10 s) belongs to a process that was killed, crashed, hangs or idles.
  // Open and written lately (by utc_ns), and not silent since before another process of the
  // run closed its file (last_close_utc_ns: the job ended, or went on, without this one).
  bool beingWritten(uint64_t utc_ns, uint64_t last_close_utc_ns) const {
    const uint64_t quiet_ns = std::max<uint64_t>(10'000'000'000ull, 10ull * flush_period_ms * 1'000'000ull);
    const uint64_t flushes_ns = 2ull * std::max<uint32_t>(flush_period_ms, 1) * 1'000'000ull;
    return file_state == FileState::kOpen && utc_ns < modified_utc_ns + quiet_ns && last_close_utc_ns <= modified_utc_ns + flushes_ns &&
           !modifiedAfterItsWriter();
  }
  // Clock maps from the process's ClockSample records (invalid when it wrote none).
  LinearMap gpu_from_cpu;    // CLOCK_MONOTONIC ns -> this GPU's globaltimer ns
  LinearMap gpu_from_cupti;  // CUPTI ns -> this GPU's globaltimer ns
  // How gpu_from_cupti was found when no sample read both clocks: NCCL kernels CUPTI
  // reported, how many matched an op the plugin timed, and the fit's residual over those.
  struct CuptiMatch {
    uint64_t nccl_kernels = 0;
    uint64_t matched = 0;
    double residual_rms_ns = 0;
  } cupti_match;
  // Its CPU clock (CLOCK_MONOTONIC) as CLOCK_REALTIME, which is comparable across hosts:
  // the header's realtime/monotonic pair, read when recording started.
  uint64_t start_utc_ns = 0;
  int64_t utc_minus_cpu_ns = 0;
  uint64_t utcOfCpu(uint64_t cpu_ns) const { return cpuToUtc(cpu_ns, utc_minus_cpu_ns); }
  // Its first op's CPU start and its last op's CPU end as CLOCK_REALTIME ns (0: no op): how
  // far into the run its file goes.
  uint64_t first_op_utc_ns = 0;
  uint64_t last_op_utc_ns = 0;
  uint64_t first_gpu_ns = 0;  // earliest and latest GPU time in its op records (0: none)
  uint64_t last_gpu_ns = 0;
};

// One NCCL communicator (per restart generation: a recreated one has a new id).
struct Communicator {
  uint64_t id = 0;
  NameId name = 0;  // commName when NCCL gave one, else 0
  int size = 0;     // nranks
  int n_nodes = 0;
  uint32_t restart_count = 0;
  std::vector<int> global_ranks;  // comm rank -> global rank, -1 where unknown
  std::vector<int> processes;     // comm rank -> ProcessInfo index, -1 where no file has it
  // Read from a profiler trace (Kineto) that shows one rank's side only: its instances are not
  // joined across ranks, so no analysis may call the other seats missing.
  bool one_rank_view = false;
};

// One rank's view of one op. Times are that rank's own clocks (GPU: raw globaltimer; CPU:
// CLOCK_MONOTONIC of its host); 0 means not recorded (v4 p2p has no GPU times; an op cut
// off at finalize has no gpu_end_ns).
struct MemberView {
  int32_t process = -1;
  int32_t comm_rank = -1;
  uint64_t cpu_start_ns = 0;
  uint64_t cpu_end_ns = 0;
  uint64_t gpu_start_ns = 0;
  uint64_t gpu_end_ns = 0;
  uint64_t stream = 0;
  // The GPU time before this op since the latest end of the process's ops that started
  // earlier (0 while one still ran); kNoGap for its first op, or without GPU times.
  static constexpr uint64_t kNoGap = UINT64_MAX;
  uint64_t gpu_gap_ns = kNoGap;
  uint64_t gpuDuration() const { return gpu_end_ns > gpu_start_ns && gpu_start_ns != 0 ? gpu_end_ns - gpu_start_ns : 0; }
};

// One collective instance: the ranks' records of (comm, func, seq) joined. Graph-captured
// replays carry no fresh seq from NCCL, so they join on (comm, op_index) instead.
struct CollInstance {
  uint32_t comm = 0;  // index into RunModel::comms
  NameId func = 0;
  NameId datatype = 0;
  NameId algo = 0;
  NameId proto = 0;
  // The NVTX path it was issued under (PathComm::path), as its first member read with one
  // gave it: every rank's in a program whose ranks run the same code. 0: none recorded.
  NameId path = 0;
  uint64_t seq = 0;
  uint64_t op_index = 0;
  uint64_t count = 0;  // the user's per-rank count
  uint64_t bytes = 0;  // per-rank payload (0 when the datatype was not known)
  int32_t root = -1;
  uint8_t n_channels = 0;
  bool graph_captured = false;
  // RunModel::members[first_member + comm_rank] for every comm rank of the communicator;
  // process == -1 where that rank recorded no such op (missing file, mismatch, hang).
  uint32_t first_member = 0;
  uint32_t n_members = 0;  // == the communicator's size
};

// One point-to-point transfer: the k-th send from A to B joined with the k-th receive on B
// from A (per communicator). A side with process -1 was never recorded.
struct P2pTransfer {
  uint32_t comm = 0;
  NameId func = 0;  // the API func: "Send" for a plain pair, else "AlltoAll"/"Gather"/"Scatter"
  NameId datatype = 0;
  NameId send_path = 0;  // the NVTX path each side was issued under (CollInstance::path)
  uint64_t op_index = 0;
  uint64_t count = 0;
  uint64_t bytes = 0;
  uint8_t n_channels = 0;
  NameId recv_path = 0;
  int32_t comm_size = 0;  // its communicator's members (a call's pieces need it: p2p_calls.h)
  MemberView send;
  MemberView recv;
};

// A GPU interval of one process on its own GPU clock: a compute kernel (memcpys and memsets
// run on copy engines and are left out), with its name and CUPTI stream where known.
struct GpuInterval {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  NameId name = 0;      // 0: not named (unions of intervals)
  uint32_t stream = 0;  // CUPTI's stream id
};

// A user phase (NVTX range) on the process's CPU clock.
struct PhaseSpan {
  NameId name = 0;
  uint64_t cpu_start_ns = 0;
  uint64_t cpu_end_ns = 0;
  uint16_t depth = 0;
};

// A CUDA runtime call the preload face timed (an ApiSpan record named "cuda..."), on the
// process's CPU clock: how long the CPU was inside it.
// What one name of GPU activity (a kernel, "Memcpy HtoD", "Memset") ran on one process,
// summed from CUPTI's records as they are read.
struct KernelTally {
  NameId name = 0;
  uint8_t activity = 1;  // KernelActivityRecord::activity: 1 kernel, 2 memcpy, 3 memset
  uint64_t count = 0;
  uint64_t total_ns = 0;
  uint64_t max_ns = 0;
};

// A process's communication under one NVTX path (load/phase_path_tally.h).
struct PathComm {
  NameId path = 0;  // "train_step # / backward / layers.3", names from the top down
  uint64_t ops = 0;
  uint64_t bytes = 0;
  uint64_t gpu_ns = 0;  // the ops' GPU time (those with GPU times)
  // Ops that were pieces of an AlltoAll, Gather or Scatter: each piece runs in the whole
  // call's kernel, so no piece's wait for its peer is measured (the call synchronizes as one).
  uint64_t call_pieces = 0;
};

// A return address of a sampled native call stack, as the same code is on every rank: its
// module and its address in the module's file (load/stack_tally.h).
struct NativeFrame {
  NameId module = 0;    // the module's path; 0: in no module the process recorded
  NameId build_id = 0;  // hex; 0 or "" when not known
  uint64_t address = 0;  // a return address in the file's addresses (module 0: the address in memory)
  NameId symbol = 0;    // in no module, the name the process's perf map gives the code (a JIT's: Python functions)
  friend bool operator==(const NativeFrame&, const NativeFrame&) = default;
};

// A process's ops sampled at one native call stack (load/stack_tally.h): the samples, and
// sums weighted by the ops each sample stands for, which estimate those of all its ops.
struct StackComm {
  std::vector<NativeFrame> frames;  // innermost first: frames[0] is in the function that called NCCL
  uint64_t samples = 0;
  uint64_t ops = 0;      // the samples' weights
  uint64_t bytes = 0;    // weight x bytes
  uint64_t api_ns = 0;   // weight x time inside the NCCL call
};

struct ProcessTimeline {
  std::vector<KernelTally> kernels;  // one per name, most total time first
  // CUPTI kernels not from NCCL, mapped to the GPU clock, sorted by start; empty when the
  // loader was not asked to keep them (LoadOptions::keep_compute).
  std::vector<GpuInterval> compute;
  std::vector<PhaseSpan> phases;     // sorted by start
  CudaSyncTally cuda_sync;           // its CUDA sync calls, tallied (within the --from/--to window)
  ProxyWireTally proxy_wire;         // its network sends as NCCL's proxy timed them (the same window)
  std::vector<PathComm> comm_by_path;  // its ops by NVTX path (the same window); empty: none ran under a range
  std::unordered_map<uint32_t, NameId> path_names;  // its file's PhasePath ids its ops carried, as comm_by_path names them
  std::vector<StackComm> comm_by_stack;  // its sampled native call stacks (the same window)
  // Where it ran Python (an interpreter module in its stacks) and kept no perf map beside its
  // file: the interpreter's module, whose Python functions are then not in the stacks.
  std::string python_without_perf_map;
  bool has_kernel_records = false;   // CUPTI delivered kernel records at all
  // Compute kernels left out of `compute`: the process wrote no clock sample pairing CUPTI's
  // clock with the GPU's, so they cannot be placed on the timeline of its ops.
  uint64_t unmapped_kernels = 0;
};

// The part of a run a report covers (`report --from/--to`): ops whose earliest member
// started in [from, to), CLOCK_REALTIME ns.
struct TimeWindow {
  uint64_t from_utc_ns = 0;
  uint64_t to_utc_ns = UINT64_MAX;
  // Ends given as steps (--from/--to step:N; -1 where a time was given): step_rank's NVTX
  // step ranges, or its op sequence's, step_period ops each.
  int64_t from_step = -1, to_step = -1;
  int step_rank = -1;
  uint64_t step_period = 0;    // ops per step, for steps inferred from the ops
  std::string step_range;      // the NVTX range of the first step, for steps from NVTX ranges
  // A shard's window (report --shard): shard of shards, cut where the reference process's
  // ops start (load/shard_window.h). Every op falls in exactly one shard's window (ops with no
  // CPU time in the last shard's), so the shards' states add up to the whole run's
  // (TimeWindowFilter says what a shard does with the gaps and call pieces at its cuts).
  int shard = 0, shards = 1;
  bool sharded() const { return shards > 1; }
  bool set() const { return from_utc_ns != 0 || to_utc_ns != UINT64_MAX || from_step >= 0 || to_step >= 0 || sharded(); }
  bool contains(uint64_t utc_ns) const { return utc_ns >= from_utc_ns && utc_ns < to_utc_ns; }
};

struct RunModel {
  std::string dir;
  uint64_t read_utc_ns = 0;  // when the files were read (CLOCK_REALTIME): what "lately" means for open files
  uint64_t last_close_utc_ns = 0;  // the latest modification time of the files their writers closed
  bool beingWritten(const ProcessInfo& p) const { return p.beingWritten(read_utc_ns, last_close_utc_ns); }
  std::vector<ProcessInfo> processes;
  std::vector<ProcessTimeline> timelines;  // parallel to processes
  std::vector<Communicator> comms;
  // False when the loader streamed the collectives and plain transfers to the analyses
  // without keeping them (LoadOptions::keep_ops): collectives and members are then empty and
  // transfers holds only the pieces of AlltoAll, Gather and Scatter calls; what reads the
  // rest reads the stream or the files.
  bool ops_kept = true;
  std::vector<CollInstance> collectives;  // sorted by (comm, op_index)
  std::vector<MemberView> members;
  std::vector<P2pTransfer> transfers;     // sorted by (comm, op_index)
  NamePool names;
  std::vector<std::string> skipped_files;  // "commtrace: FILE: why" for files that could not be read at all
  std::vector<int> missing_ranks;         // global ranks < world_size with no file
  int world_size = 0;                      // largest world size any header or communicator declares
  TimeWindow window;                       // what the report covers (all of the run when not set)
  uint64_t ops_outside_window = 0;         // collective instances and transfers left out by it
  int shards = 1;  // a report merged from shards' states (shard/shard_state.h): how many; 1: the run read whole

  const MemberView* membersOf(const CollInstance& c) const { return members.data() + c.first_member; }
  std::string_view name(NameId id) const { return names[id]; }
  // processes[index], or nullptr for an index no process has (-1: unknown).
  const ProcessInfo* processAt(int32_t index) const {
    return index >= 0 && static_cast<size_t>(index) < processes.size() ? &processes[static_cast<size_t>(index)] : nullptr;
  }
};

}  // namespace commtrace::report
