// A realistic stream of collective records, as one rank of an FSDP + tensor-parallel job
// would produce: per step, per transformer block an AllGather of the block's parameters in
// forward, an AllGather and a ReduceScatter in backward on the data-parallel communicator,
// two AllReduces per block on the tensor-parallel communicator, and a loss AllReduce on the
// world. Times follow a simple model: the CPU issues each op after the compute that
// precedes it (the same for every block, with 2% jitter), API calls take 3-9 us, each GPU
// stream runs its ops in order at a size-dependent bandwidth with 3% jitter.
// Used by the demo generator, the on-disk size benchmark and tests.
#pragma once

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "core/record.h"

namespace commtrace::synthetic {

struct FsdpOptions {
  int rank = 0;
  int world_size = 8;
  int layers = 24;
  uint64_t seed = 1;
  uint64_t start_ns = 1'000'000'000;  // CPU clock at the first op
  // GPU globaltimer granularity. NVIDIA's sample pTimer values are multiples of 1024 ns
  // (docs/nccl-profiler.md, KernelCh); 1 models a nanosecond-exact timer.
  uint64_t gpu_timer_tick_ns = 1024;
};

class FsdpStream {
 public:
  explicit FsdpStream(FsdpOptions options);
  // The next collective, in issue order. The stream is endless.
  CollRecord next();
  // How many ops one training step has.
  size_t opsPerStep() const { return plan_.size(); }

 private:
  struct PlannedOp {
    size_t comm;
    StringId func;
    uint64_t count;   // elements per rank (bf16)
    uint64_t gap_ns;  // CPU time since the previous op in the step
  };
  struct Comm {
    uint64_t id = 0;
    uint64_t stream = 0;
    uint64_t gpu_free_ns = 0;  // when this comm's stream finishes its last op
    uint64_t op_index = 0;
    std::vector<std::pair<StringId, uint64_t>> seq;  // next seqNumber per func
    uint64_t nextSeq(StringId func);
  };
  void planStep();

  FsdpOptions options_;
  std::mt19937_64 rng_;
  std::vector<PlannedOp> plan_;
  std::vector<Comm> comms_;
  size_t position_ = 0;
  uint64_t cpu_ns_;
};

}  // namespace commtrace::synthetic
