#include "tools/synthetic/fsdp_stream.h"

#include <algorithm>

#include "core/nccl_vocab.h"
#include "core/string_table.h"

namespace commtrace::synthetic {

uint64_t FsdpStream::Comm::nextSeq(StringId func) {
  for (auto& [f, s] : seq) {
    if (f == func) return s++;
  }
  seq.emplace_back(func, 1);
  return 0;
}

namespace {

constexpr uint64_t kGpuClockOffsetNs = 1'763'000'000'000'000'000ull;  // globaltimer ~ Unix epoch
constexpr uint64_t kBlockElements = 201'326'592;     // a 7B-class block's parameters
constexpr uint64_t kEmbeddingElements = 524'288'000;
constexpr uint64_t kActivationElements = 2'097'152;   // TP all-reduce of one block's output
constexpr size_t kDataParallel = 0, kTensorParallel = 1, kWorld = 2;

}  // namespace

FsdpStream::FsdpStream(FsdpOptions options)
    : options_(options), rng_(options.seed * 7919 + static_cast<uint64_t>(options.rank)), cpu_ns_(options.start_ns) {
  comms_.resize(3);
  comms_[0].id = 0x5A17D3C2B1A09F81ull;  // data parallel (FSDP shards)
  comms_[1].id = 0x1C0FFEE2DEADBEEFull;  // tensor parallel
  comms_[2].id = 0x00C0DE5EED5EED01ull;  // world
  for (size_t c = 0; c < comms_.size(); ++c) comms_[c].stream = 0x7f3a10000000ull + 0x400 * c;
  planStep();
}

// One step of a transformer with identical blocks: what differs between ops is the block
// structure, not the block index, as in a real model. Gaps are the CPU time between two
// issues, set by the compute between them.
void FsdpStream::planStep() {
  StringTable& strings = StringTable::global();
  const StringId all_gather = strings.intern(nccl::funcName(nccl::Func::kAllGather));
  const StringId reduce_scatter = strings.intern(nccl::funcName(nccl::Func::kReduceScatter));
  const StringId all_reduce = strings.intern(nccl::funcName(nccl::Func::kAllReduce));
  const uint64_t world = static_cast<uint64_t>(options_.world_size);
  const uint64_t block = kBlockElements / world, embedding = kEmbeddingElements / world;
  plan_.push_back({kDataParallel, all_gather, embedding, 50'000});
  for (int l = 0; l < options_.layers; ++l) {
    plan_.push_back({kDataParallel, all_gather, block, 40'000});           // prefetch next block
    plan_.push_back({kTensorParallel, all_reduce, kActivationElements, 420'000});  // attention out
    plan_.push_back({kTensorParallel, all_reduce, kActivationElements, 480'000});  // MLP out
  }
  for (int l = 0; l < options_.layers; ++l) {
    plan_.push_back({kDataParallel, all_gather, block, 30'000});
    plan_.push_back({kTensorParallel, all_reduce, kActivationElements, 850'000});
    plan_.push_back({kTensorParallel, all_reduce, kActivationElements, 900'000});
    plan_.push_back({kDataParallel, reduce_scatter, block, 60'000});
  }
  plan_.push_back({kDataParallel, reduce_scatter, embedding, 120'000});
  plan_.push_back({kWorld, all_reduce, 1, 200'000});  // loss
}

CollRecord FsdpStream::next() {
  StringTable& strings = StringTable::global();
  const PlannedOp& op = plan_[position_];
  position_ = (position_ + 1) % plan_.size();
  Comm& comm = comms_[op.comm];

  std::normal_distribution<double> gap_jitter(1.0, 0.02);
  std::normal_distribution<double> jitter(1.0, 0.03);
  std::uniform_int_distribution<uint64_t> api_ns(3'000, 9'000);
  std::uniform_int_distribution<uint64_t> launch_ns(6'000, 12'000);
  cpu_ns_ += static_cast<uint64_t>(static_cast<double>(op.gap_ns) * std::max(0.5, gap_jitter(rng_)));

  const uint64_t bytes = op.count * nccl::kDatatypes[nccl::kBfloat16].size;
  const bool large = bytes >= (1u << 20);
  // ~200 GB/s for large messages (NVLink-class), latency-bound below.
  const double transfer_ns = 15'000.0 + static_cast<double>(bytes) * (large ? 1.0 / 200.0 : 1.0 / 20.0);
  const uint64_t gpu_start = std::max(cpu_ns_ + launch_ns(rng_), comm.gpu_free_ns + 1'500);
  const uint64_t gpu_end = gpu_start + static_cast<uint64_t>(transfer_ns * std::max(0.5, jitter(rng_)));
  comm.gpu_free_ns = gpu_end;

  const uint64_t tick = std::max<uint64_t>(1, options_.gpu_timer_tick_ns);
  CollRecord r{};
  r.comm_id = comm.id;
  r.seq = comm.nextSeq(op.func);
  r.op_index = comm.op_index++;
  r.count = op.count;
  r.bytes = bytes;
  r.stream = comm.stream;
  r.cpu_start_ns = cpu_ns_;
  r.cpu_end_ns = cpu_ns_ + api_ns(rng_);
  r.gpu_start_ns = (gpu_start + kGpuClockOffsetNs) / tick * tick;
  r.gpu_end_ns = (gpu_end + kGpuClockOffsetNs) / tick * tick;
  r.func = op.func;
  r.datatype = strings.intern(nccl::kDatatypes[nccl::kBfloat16].name);
  r.algo = strings.intern(nccl::algoName(nccl::Algo::kRing));
  r.proto = strings.intern(nccl::protoName(large ? nccl::Proto::kSimple : nccl::Proto::kLL));
  r.root = -1;
  const uint64_t spread = std::uniform_int_distribution<uint64_t>(200, 3'000)(rng_);  // channel starts
  r.gpu_channel_spread_ns = static_cast<uint32_t>(spread / tick * tick);
  r.n_channels = large ? 16 : 4;
  r.n_warps = 16;
  cpu_ns_ = r.cpu_end_ns;
  return r;
}

}  // namespace commtrace::synthetic
