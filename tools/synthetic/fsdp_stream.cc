#include "tools/synthetic/fsdp_stream.h"

#include <algorithm>

#include "ringbuffer/string_table.h"

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
constexpr uint64_t kLayerElements[] = {12'582'912, 25'165'824, 4'194'304, 37'748'736};

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

void FsdpStream::planStep() {
  StringTable& strings = StringTable::global();
  const StringId all_gather = strings.intern("AllGather");
  const StringId reduce_scatter = strings.intern("ReduceScatter");
  const StringId all_reduce = strings.intern("AllReduce");
  std::uniform_int_distribution<uint64_t> gap(60'000, 400'000);
  const auto layer = [&](int l) { return kLayerElements[l % 4] / static_cast<uint64_t>(options_.world_size); };
  for (int l = 0; l < options_.layers; ++l) {
    plan_.push_back({0, all_gather, layer(l), gap(rng_)});
    plan_.push_back({1, all_reduce, 2'097'152, gap(rng_) / 4});
  }
  for (int l = options_.layers - 1; l >= 0; --l) {
    plan_.push_back({0, all_gather, layer(l), gap(rng_)});
    plan_.push_back({1, all_reduce, 2'097'152, gap(rng_) / 4});
    plan_.push_back({0, reduce_scatter, layer(l), gap(rng_) / 2});
  }
  plan_.push_back({2, all_reduce, 1, gap(rng_)});
}

CollRecord FsdpStream::next() {
  StringTable& strings = StringTable::global();
  const PlannedOp& op = plan_[position_];
  position_ = (position_ + 1) % plan_.size();
  Comm& comm = comms_[op.comm];

  std::normal_distribution<double> jitter(1.0, 0.03);
  std::uniform_int_distribution<uint64_t> api_ns(3'000, 9'000);
  std::uniform_int_distribution<uint64_t> launch_ns(6'000, 12'000);
  cpu_ns_ += static_cast<uint64_t>(static_cast<double>(op.gap_ns) * std::max(0.5, jitter(rng_)));

  const uint64_t bytes = op.count * 2;  // bf16
  const bool large = bytes >= (1u << 20);
  // busBw ~ 80 GB/s for large messages, latency-bound below.
  const double transfer_ns = 15'000.0 + static_cast<double>(bytes) * (large ? 1.0 / 80.0 : 1.0 / 20.0);
  const uint64_t gpu_start = std::max(cpu_ns_ + launch_ns(rng_), comm.gpu_free_ns + 1'500);
  const uint64_t gpu_end = gpu_start + static_cast<uint64_t>(transfer_ns * std::max(0.5, jitter(rng_)));
  comm.gpu_free_ns = gpu_end;

  CollRecord r{};
  r.comm_id = comm.id;
  r.seq = comm.nextSeq(op.func);
  r.op_index = comm.op_index++;
  r.count = op.count;
  r.bytes = bytes;
  r.stream = comm.stream;
  r.cpu_start_ns = cpu_ns_;
  r.cpu_end_ns = cpu_ns_ + api_ns(rng_);
  r.gpu_start_ns = gpu_start + kGpuClockOffsetNs;
  r.gpu_end_ns = gpu_end + kGpuClockOffsetNs;
  r.func = op.func;
  r.datatype = strings.intern("ncclBfloat16");
  r.algo = strings.intern("RING");
  r.proto = strings.intern(large ? "SIMPLE" : "LL");
  r.root = -1;
  r.gpu_channel_spread_ns = static_cast<uint32_t>(launch_ns(rng_) / 8);
  r.n_channels = large ? 16 : 4;
  r.n_warps = 16;
  cpu_ns_ = r.cpu_end_ns;
  return r;
}

}  // namespace commtrace::synthetic
