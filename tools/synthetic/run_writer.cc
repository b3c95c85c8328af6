#include "tools/synthetic/run_writer.h"

#include <algorithm>
#include <atomic>
#include <span>
#include <string_view>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "core/nccl_vocab.h"
#include "core/record.h"
#include "core/string_table.h"
#include "sink/chunk_encoder.h"
#include "sink/frame.h"
#include "sink/trace_file.h"

namespace commtrace::synthetic {
namespace {

constexpr uint64_t kGpuClockBaseNs = 1'790'000'000'000'000'000ull;  // globaltimer ~ Unix epoch
constexpr uint64_t kGpuTickNs = 1024;
constexpr uint64_t kSlotNs = 2'000'000;  // one op per slot: no two ops of a rank overlap
constexpr uint64_t kJitterNs = 50'000;   // arrivals spread over [0, kJitterNs)
constexpr uint64_t kLaunchLeadNs = 30'000;  // the CPU enqueues an op this long before the GPU starts it
constexpr uint64_t kApiCallNs = 6'000;
constexpr uint32_t kChunkRecords = 16384;  // as the flusher's default

enum CommKind { kWorld, kTensorParallel, kDataParallel };

using nccl::DataType;
using nccl::Func;

struct PlannedColl {
  CommKind comm;
  Func func;
  uint64_t count;  // per rank; sharded: the whole tensor, each rank's share count / members
  DataType datatype;
  bool sharded = false;
};

// One step of the job, in issue order (see run_writer.h).
constexpr PlannedColl kStep[] = {
    {kTensorParallel, Func::kAllReduce, 4'194'304, nccl::kBfloat16},
    {kTensorParallel, Func::kAllReduce, 4'194'304, nccl::kBfloat16},
    // FSDP's gather and scatter of one layer's parameters (1 MiB), sharded across the data-parallel
    // copies: a fixed per-rank count would grow the transfer with the job (10 ms at 475 copies,
    // past its slot, so that every op overlapped the next and hid the planted straggler).
    {kDataParallel, Func::kAllGather, 524'288, nccl::kBfloat16, true},
    {kDataParallel, Func::kReduceScatter, 524'288, nccl::kBfloat16, true},
    {kWorld, Func::kAllReduce, 1, nccl::kFloat32},
};
// DDP: gradient buckets all-reduced on the world communicator after backward.
constexpr PlannedColl kDdpStep[] = {
    {kWorld, Func::kAllReduce, 6'553'600, nccl::kBfloat16},
    {kWorld, Func::kAllReduce, 6'553'600, nccl::kBfloat16},
    {kWorld, Func::kAllReduce, 6'553'600, nccl::kBfloat16},
    {kWorld, Func::kAllReduce, 6'553'600, nccl::kBfloat16},
};
constexpr uint64_t kP2pCount = 1'048'576;  // bf16 elements per send
constexpr uint64_t kP2pEverySteps = 4;      // pipeline sends close every 4th step

struct CommDef {
  uint64_t id = 0;
  std::string name;
  std::vector<int> members;  // global ranks in comm-rank order
  int n_nodes = 0;
  double gbps = 0;  // ring bandwidth: intra-node or across nodes
};

uint64_t mix(uint64_t x) {  // splitmix64: deterministic per-(rank, op) jitter
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The job's layout and everything every rank's writer shares.
struct Job {
  SyntheticRunOptions options;
  int nodes = 0;
  std::vector<CommDef> comms;  // world, tp.0 .. tp.<nodes-1>, dp.0 .. dp.<per_node-1>
  struct {
    StringId send, recv, ring, simple, bf16;
    StringId kernels[3];
  } names{};

  std::span<const PlannedColl> step;  // one step's collectives, in issue order
  bool p2p = false;                    // pipeline sends every kP2pEverySteps steps

  uint64_t collsPerStep() const { return step.size(); }
  int nodeOf(int rank) const { return rank / options.ranks_per_node; }
  const CommDef& commOf(CommKind kind, int rank) const {
    if (kind == kWorld) return comms[0];
    if (kind == kTensorParallel) return comms[1 + static_cast<size_t>(nodeOf(rank))];
    return comms[1 + static_cast<size_t>(nodes) + static_cast<size_t>(rank % options.ranks_per_node)];
  }
  // The node's GPU globaltimer at job time t: its own offset and drift, quantized to the tick.
  uint64_t gpuNs(int node, uint64_t t) const {
    const double drift_ppm = 2.5 * (node % 3 - 1);
    const double offset_ns = 1'234'567.0 * node + static_cast<double>(t) * drift_ppm * 1e-6;
    const uint64_t raw = kGpuClockBaseNs + t + static_cast<uint64_t>(std::max(0.0, offset_ns));
    return raw / kGpuTickNs * kGpuTickNs;
  }
  uint64_t cpuNs(int node, uint64_t t) const { return 1'000'000'000'000ull + 7'000'000'000ull * static_cast<uint64_t>(node) + t; }
  // CLOCK_REALTIME of CPU time 0 (every node's). A run still being written is written as of
  // now: a live writer's clock samples trail its file's mtime by a flush, and a file modified
  // long after its last sample reads as cut short (ProcessInfo::modifiedAfterItsWriter).
  uint64_t realtime_base_ns = 1'760'000'000'000'000'000ull;
  uint64_t jitterNs(int rank, uint64_t key) const { return mix(static_cast<uint64_t>(rank) * 0x100000001B3ull ^ key) % kJitterNs; }
  // The straggler computes longer before every collective: it arrives this much later.
  uint64_t straggleNs(int rank) const {
    return rank == options.straggler_rank ? static_cast<uint64_t>(options.straggler_us * 1e3) : 0;
  }
  // All members stop together, after the latest arrival the communicator can have.
  uint64_t latestArrivalNs(const CommDef& c) const {
    const bool straggler_in = std::find(c.members.begin(), c.members.end(), options.straggler_rank) != c.members.end();
    return kJitterNs + (straggler_in ? straggleNs(options.straggler_rank) : 0);
  }
};

CommDef makeComm(uint64_t id, std::string name, std::vector<int> members, const Job& job) {
  CommDef c{id, std::move(name), std::move(members), 0, 0};
  std::vector<int> nodes;
  for (int r : c.members) nodes.push_back(job.nodeOf(r));
  std::sort(nodes.begin(), nodes.end());
  c.n_nodes = static_cast<int>(std::unique(nodes.begin(), nodes.end()) - nodes.begin());
  c.gbps = c.n_nodes > 1 ? 24.0 : 150.0;
  return c;
}

Job planJob(const SyntheticRunOptions& options) {
  Job job;
  job.options = options;
  if (options.in_flight_ops > 0) job.realtime_base_ns = realtimeNs() - job.cpuNs(0, 0);
  const int per_node = std::min(options.ranks_per_node, options.ranks);
  job.options.ranks_per_node = per_node;
  job.nodes = (options.ranks + per_node - 1) / per_node;
  std::vector<int> world(static_cast<size_t>(options.ranks));
  for (int r = 0; r < options.ranks; ++r) world[static_cast<size_t>(r)] = r;
  job.comms.push_back(makeComm(0xC0FFEE0000000001ull, "world", world, job));
  job.step = options.shape == JobShape::kDdp ? std::span<const PlannedColl>(kDdpStep) : std::span<const PlannedColl>(kStep);
  job.p2p = options.shape == JobShape::kMixed;
  for (int n = 0; job.p2p && n < job.nodes; ++n) {
    std::vector<int> members;
    for (int r = n * per_node; r < std::min(options.ranks, (n + 1) * per_node); ++r) members.push_back(r);
    job.comms.push_back(makeComm(0x7E50000000000000ull + static_cast<uint64_t>(n), "tp." + std::to_string(n), members, job));
  }
  for (int l = 0; job.p2p && l < per_node; ++l) {
    std::vector<int> members;
    for (int r = l; r < options.ranks; r += per_node) members.push_back(r);
    job.comms.push_back(makeComm(0xD900000000000000ull + static_cast<uint64_t>(l), "dp." + std::to_string(l), members, job));
  }
  StringTable& strings = StringTable::global();
  job.names = {strings.intern(nccl::funcName(Func::kSend)), strings.intern(nccl::funcName(Func::kRecv)),
               strings.intern(nccl::algoName(nccl::Algo::kRing)), strings.intern(nccl::protoName(nccl::Proto::kSimple)),
               strings.intern(nccl::kDatatypes[nccl::kBfloat16].name),
               {strings.intern("sm90_xmma_gemm_bf16bf16_bf16f32"), strings.intern("vectorized_elementwise_kernel"),
                strings.intern("flash_fwd_kernel")}};
  return job;
}

// Streams one rank's records into its file, cutting a chunk where the library's flusher
// would: at each wake (every flush period of the rank's CPU clock), and whenever it holds
// kChunkRecords.
class RankWriter {
 public:
  RankWriter(const Job& job, int rank) : job_(job), rank_(rank), node_(job.nodeOf(rank)), encoder_(StringTable::global()) {}

  bool write(SyntheticRunTruth& truth, std::string& error) {
    if (!file_.create(job_.options.dir, header(), error)) return false;
    writeCommInfos();
    const uint64_t in_flight = job_.options.in_flight_ops;
    const uint64_t total = job_.options.collectives_per_rank - std::min<uint64_t>(job_.options.collectives_per_rank,
                                                                                  in_flight == 0 ? 0 : static_cast<uint64_t>(rank_) % (in_flight + 1));
    for (uint64_t op = 0; op < total; ++op) {
      writeColl(op, truth);
      const uint64_t per_step = job_.collsPerStep();
      if (job_.p2p && op % per_step == per_step - 1 && (op / per_step) % kP2pEverySteps == 0) writeP2p(op / per_step, truth);
    }
    if (in_flight == 0) {  // the flusher's stop() flushes CUPTI's buffers too
      for (const RecordSlot& k : late_kernels_) addToChunk(k);
      for (const RecordSlot& k : pending_kernels_) addToChunk(k);
    }
    if (in_flight == 0 || encoder_.rows() > 0) flushChunk(/*closing=*/in_flight == 0);  // as the flusher's stop() does
    truth.bytes_written += bytes_;
    if (!ok_) error = error_;
    return ok_;
  }

 private:
  FileHeaderFields header() const {
    FileHeaderFields h;
    h.identity = {.rank = rank_, .local_rank = rank_ % job_.options.ranks_per_node, .world_size = job_.options.ranks, .job_id = "synthetic-run"};
    h.host = "node" + std::to_string(node_);
    h.pid = 10'000 + rank_;
    h.start_realtime_ns = job_.realtime_base_ns;
    h.start_monotonic_ns = job_.cpuNs(node_, 0);
    h.program = "commtrace-synth";
    h.ring_records = 16384;
    h.flush_period_ms = job_.options.flush_period_ms;
    return h;
  }

  // `cpu_ns`: the record's CPU time; a chunk is cut before the first record past a wake,
  // with the kernels CUPTI handed over by the wake before.
  void add(const RecordSlot& slot, uint64_t cpu_ns) {
    const uint64_t period_ns = uint64_t{job_.options.flush_period_ms} * 1'000'000;
    if (period_ns != 0 && cpu_ns >= next_wake_ns_) {
      for (const RecordSlot& k : late_kernels_) addToChunk(k);
      late_kernels_.swap(pending_kernels_);
      pending_kernels_.clear();
      if (encoder_.rows() > 0) flushChunk();
      next_wake_ns_ = (cpu_ns / period_ns + 1) * period_ns;
    }
    addToChunk(slot);
  }

  void addToChunk(const RecordSlot& slot) {
    encoder_.add(slot);
    if (encoder_.rows() >= kChunkRecords) flushChunk();
  }

  uint64_t cuptiNs(uint64_t t) const { return job_.realtime_base_ns + job_.cpuNs(node_, t); }

  // Compute kernels back to back over [from, to) of job time, handed over at a later wake.
  void runKernels(uint64_t from, uint64_t to, SyntheticRunTruth& truth) {
    const uint32_t n = job_.options.kernels_per_collective;
    if (n == 0 || to <= from + n * 2'000ull) return;
    const uint64_t each = (to - from) / n;
    for (uint32_t i = 0; i < n; ++i) {
      RecordSlot slot{};
      slot.kind = RecordKind::kKernelActivity;
      const uint64_t start = from + i * each;
      slot.payload.kernel_activity = {.start_ns = cuptiNs(start), .end_ns = cuptiNs(start + each - 1'000), .bytes = 0,
                                      .name = job_.names.kernels[i % std::size(job_.names.kernels)], .correlation_id = correlation_++,
                                      .stream_id = 7, .context_id = 1, .device = 0, .grid_size = 132, .block_size = 256, .activity = 1};
      pending_kernels_.push_back(slot);
      ++truth.kernel_records;
    }
  }

  void flushChunk(bool closing = false) {
    RecordSlot sample{};  // as the flusher does: one clock reading per chunk
    sample.kind = RecordKind::kClockSample;
    sample.payload.clock_sample = {last_cpu_ns_, job_.realtime_base_ns + last_cpu_ns_, 0, 0, -1};
    if (job_.options.kernels_per_collective > 0)
      sample.payload.clock_sample = {last_cpu_ns_, cuptiNs(last_t_ns_), job_.gpuNs(node_, last_t_ns_), cuptiNs(last_t_ns_), 0};
    encoder_.add(sample);
    encoder_.finish(chunk_index_++, closing, payload_);
    framed_.clear();
    frame::append(framed_, frame::Type::kChunk, 0, payload_);
    if (ok_ && !file_.append(framed_, error_)) ok_ = false;
    bytes_ += framed_.size();
  }

  void writeCommInfos() {
    for (const CommDef& c : job_.comms) {
      const auto it = std::find(c.members.begin(), c.members.end(), rank_);
      if (it == c.members.end()) continue;
      RecordSlot slot{};
      slot.kind = RecordKind::kCommInfo;
      slot.payload.comm_info = {c.id, job_.cpuNs(node_, 0), StringTable::global().intern(c.name), c.n_nodes,
                                static_cast<int32_t>(c.members.size()), static_cast<int32_t>(it - c.members.begin()),
                                rank_, rank_ % job_.options.ranks_per_node};
      add(slot, slot.payload.comm_info.cpu_ns);
    }
  }

  // Counters per communicator: op_index, and per func the NCCL seqNumber.
  struct CommCounters {
    uint64_t op_index = 0;
    std::vector<std::pair<std::string_view, uint64_t>> seq;
    uint64_t nextSeq(std::string_view func) {
      for (auto& [f, s] : seq) if (f == func) return s++;
      seq.emplace_back(func, 1);
      return 0;
    }
  };
  CommCounters& countersOf(const CommDef& c) {
    const size_t index = static_cast<size_t>(&c - job_.comms.data());
    if (counters_.size() <= index) counters_.resize(job_.comms.size());
    return counters_[index];
  }

  static uint64_t countOf(const PlannedColl& p, const CommDef& c) {
    return p.sharded ? std::max<uint64_t>(1, p.count / c.members.size()) : p.count;
  }
  static uint64_t bytesOf(const PlannedColl& p, const CommDef& c) { return countOf(p, c) * nccl::kDatatypes[p.datatype].size; }

  // A ring's busiest edge carries busBw's share of nccl-tests' S.
  static uint64_t transferNs(const PlannedColl& p, const CommDef& c) {
    const int n = static_cast<int>(c.members.size());
    const std::string_view func = nccl::funcName(p.func);
    const double edge_bytes = static_cast<double>(nccl::ncclTestsBytes(func, bytesOf(p, c), n)) * nccl::busBwFactor(func, n);
    return 10'000 + static_cast<uint64_t>(n > 1 ? edge_bytes / c.gbps : 0);
  }

  void writeColl(uint64_t op, SyntheticRunTruth& truth) {
    const uint64_t per_step = job_.collsPerStep();
    const PlannedColl& p = job_.step[op % per_step];
    const CommDef& c = job_.commOf(p.comm, rank_);
    const uint64_t slot_start = (op + op / per_step) * kSlotNs;  // every step also has a p2p (or idle) slot
    const uint64_t arrival = slot_start + job_.jitterNs(rank_, op) + job_.straggleNs(rank_);
    const uint64_t stop = slot_start + job_.latestArrivalNs(c) + transferNs(p, c);
    CommCounters& counters = countersOf(c);
    StringTable& strings = StringTable::global();
    RecordSlot slot{};
    slot.kind = RecordKind::kColl;
    slot.payload.coll = CollRecord{.comm_id = c.id,
                                   .seq = counters.nextSeq(nccl::funcName(p.func)),
                                   .op_index = counters.op_index++,
                                   .count = countOf(p, c),
                                   .bytes = bytesOf(p, c),
                                   .stream = 0x7f0000000000ull + static_cast<uint64_t>(p.comm) * 0x400,
                                   .cpu_start_ns = job_.cpuNs(node_, arrival - kLaunchLeadNs),
                                   .cpu_end_ns = job_.cpuNs(node_, arrival - kLaunchLeadNs + kApiCallNs),
                                   .gpu_start_ns = job_.gpuNs(node_, arrival),
                                   .gpu_end_ns = job_.gpuNs(node_, stop),
                                   .func = strings.intern(nccl::funcName(p.func)),
                                   .datatype = strings.intern(nccl::kDatatypes[p.datatype].name),
                                   .algo = job_.names.ring,
                                   .proto = job_.names.simple,
                                   .root = -1,
                                   .n_channels = 8};
    last_cpu_ns_ = slot.payload.coll.cpu_end_ns;
    last_t_ns_ = arrival - kLaunchLeadNs + kApiCallNs;
    add(slot, last_cpu_ns_);
    ++truth.coll_records;
    runKernels(arrival + 5'000, slot_start + kSlotNs, truth);
    if (c.members.front() == rank_) ++truth.coll_instances;
  }

  // A send to the rank one node ahead and a receive from the one behind, in one slot.
  void writeP2p(uint64_t step, SyntheticRunTruth& truth) {
    const int ranks = job_.options.ranks;
    if (ranks < 2) return;
    const int hop = ranks > job_.options.ranks_per_node ? job_.options.ranks_per_node : 1;
    const CommDef& world = job_.comms[0];
    const uint64_t slot_start = (step + 1) * (job_.collsPerStep() + 1) * kSlotNs - kSlotNs;
    const uint64_t stop = slot_start + kJitterNs + 100'000;
    for (const bool is_send : {true, false}) {
      const int peer = is_send ? (rank_ + hop) % ranks : (rank_ - hop + ranks) % ranks;
      const uint64_t arrival = slot_start + job_.jitterNs(rank_, ~step);
      RecordSlot slot{};
      slot.kind = RecordKind::kP2p;
      slot.payload.p2p = P2pRecord{.comm_id = world.id,
                                   .op_index = step / kP2pEverySteps,  // per (comm, direction, peer)
                                   .count = kP2pCount,
                                   .bytes = kP2pCount * 2,
                                   .stream = 0x7f0000100000ull,
                                   .cpu_start_ns = job_.cpuNs(node_, arrival - kLaunchLeadNs),
                                   .cpu_end_ns = job_.cpuNs(node_, arrival - kLaunchLeadNs + kApiCallNs),
                                   .gpu_start_ns = job_.gpuNs(node_, arrival),
                                   .gpu_end_ns = job_.gpuNs(node_, stop),
                                   .func = is_send ? job_.names.send : job_.names.recv,
                                   .datatype = job_.names.bf16,
                                   .peer = peer,
                                   .n_channels = 2};
      add(slot, slot.payload.p2p.cpu_end_ns);
      ++truth.p2p_records;
      if (is_send) ++truth.p2p_transfers;
    }
  }

  const Job& job_;
  const int rank_;
  const int node_;
  ChunkEncoder encoder_;
  TraceFile file_;
  std::vector<CommCounters> counters_;
  wire::Bytes payload_, framed_;
  uint64_t chunk_index_ = 0;
  uint64_t last_cpu_ns_ = 0;
  uint64_t last_t_ns_ = 0;  // job time of last_cpu_ns_
  std::vector<RecordSlot> pending_kernels_, late_kernels_;  // CUPTI's: handed over at the next wake, written at the one after
  uint32_t correlation_ = 1;
  uint64_t next_wake_ns_ = 0;
  uint64_t bytes_ = 0;
  bool ok_ = true;
  std::string error_;
};

}  // namespace

bool writeSyntheticRun(const SyntheticRunOptions& options, SyntheticRunTruth& truth, std::string& error) {
  if (options.ranks < 1 || options.ranks_per_node < 1) {
    error = "commtrace: a synthetic run needs at least one rank and one rank per node";
    return false;
  }
  const Job job = planJob(options);
  std::atomic<int> next_rank{0};
  std::vector<SyntheticRunTruth> truths(static_cast<size_t>(std::max(1, options.threads)));
  std::vector<std::string> errors(truths.size());
  std::vector<std::thread> workers;
  for (size_t t = 0; t < truths.size(); ++t) {
    workers.emplace_back([&, t] {
      for (int r = next_rank++; r < options.ranks && errors[t].empty(); r = next_rank++) {
        RankWriter writer(job, r);
        if (writer.write(truths[t], errors[t])) ++truths[t].files;
      }
    });
  }
  for (std::thread& w : workers) w.join();
  truth = {};
  truth.communicators = static_cast<int>(job.comms.size());
  for (size_t t = 0; t < truths.size(); ++t) {
    if (!errors[t].empty() && error.empty()) error = errors[t];
    truth.files += truths[t].files;
    truth.coll_records += truths[t].coll_records;
    truth.p2p_records += truths[t].p2p_records;
    truth.coll_instances += truths[t].coll_instances;
    truth.p2p_transfers += truths[t].p2p_transfers;
    truth.kernel_records += truths[t].kernel_records;
    truth.bytes_written += truths[t].bytes_written;
  }
  return error.empty();
}

}  // namespace commtrace::synthetic
