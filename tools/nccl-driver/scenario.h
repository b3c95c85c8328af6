// A simulated distributed job, as read from a scenario file (JSON, format in
// tools/nccl-driver/README.md): ranks and nodes, communicators, the ops of one training
// step, and what is planted (compute stragglers, slow links, GPU clock offsets).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/nccl_vocab.h"

namespace commtrace::driver {

// NCCL's names, from the project's one table (core/nccl_vocab.h).
using nccl::Func;
using nccl::funcName;
using nccl::isCollective;
using Datatype = nccl::DatatypeInfo;

// "commtrace: SCENARIO: what is wrong". Programs print it and exit 2.
class ScenarioError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One communicator definition; each group becomes one NCCL communicator (its own commId).
struct CommDef {
  std::string name;
  std::vector<std::vector<int>> groups;  // global ranks, in comm-rank order
};

struct OpDef {
  Func func = Func::kAllReduce;
  int comm = 0;  // index into Scenario::comms
  // Elements as the user passes them: per rank (AllGather: sent, ReduceScatter: received),
  // per peer for AlltoAll/Gather/Scatter, per transfer for Send.
  uint64_t count = 0;
  const Datatype* datatype = nullptr;
  int root = 0;                            // comm rank (Broadcast, Reduce, Gather, Scatter)
  std::vector<std::pair<int, int>> pairs;  // Send: (sender, receiver) global ranks
  const char* algo = nullptr;              // nullptr: RING
  const char* proto = nullptr;             // nullptr: chosen by message size
  int channels = 0;                        // 0: chosen by message size
  bool graph_captured = false;
  uint64_t user_tag = 0;  // v7 userProfilerTag
};

struct StepItem {
  enum class Kind { kCompute, kOps };
  Kind kind = Kind::kCompute;
  uint64_t compute_ns = 0;
  std::string kernel;  // the compute kernel's name, as CUPTI reports it
  std::vector<int> ranks;  // the ranks that compute (pipeline stages); empty: every rank
  std::vector<OpDef> ops;
  bool user_group = false;  // written as "group": the user called ncclGroupStart/End
  bool overlap = false;     // compute goes on while these ops run (DDP buckets)
  // NVTX ranges every rank pushes around the item, outermost first (written as "nvtx":
  // "forward/layers.0"): where in the program its ops are issued.
  std::vector<std::string> nvtx;
};

struct Straggler {
  int rank = 0;
  uint64_t extra_compute_ns = 0;  // added to each compute phase of steps [first_step, last_step]
  uint64_t extra_host_ns = 0;     // the host launches each compute phase this late: the GPU idles first
  int first_step = 0;
  int last_step = 0;
};

// A link slower than the network default: between two nodes, or between two ranks.
struct SlowLink {
  bool between_nodes = false;
  int a = 0, b = 0;
  double gbps = 0;
};

struct Scenario {
  std::string name;
  std::string description;
  // "nvtx_step": every rank pushes an NVTX range "<name> <step>" around each step, as a
  // training loop does (torch.cuda.nvtx.range_push(f"train_step {i}")); empty: none.
  std::string nvtx_step;
  uint64_t seed = 1;
  int nodes = 1;
  int ranks_per_node = 1;
  int steps = 1;

  // GPU globaltimer model: base + node offset + t * (1 + drift), floored to the tick.
  uint64_t gpu_clock_base_ns = 1'790'000'000'000'000'000ull;
  uint64_t timer_tick_ns = 1024;  // sample pTimers are multiples of 1024 ns
  std::vector<int64_t> node_offsets_ns;
  std::vector<double> node_drift_ppm;

  double intra_node_gbps = 150;  // GB/s = 1e9 bytes/s
  double inter_node_gbps = 24;
  uint64_t intra_node_latency_ns = 5'000;
  uint64_t inter_node_latency_ns = 15'000;
  uint64_t channel_spread_ns = 256;  // channel c starts c * spread after channel 0

  uint64_t compute_jitter_ns = 0;  // each compute phase varies uniformly within +-jitter
  std::vector<Straggler> stragglers;
  std::vector<SlowLink> slow_links;
  // A rank killed (SIGKILL, as by the OOM killer) when it reaches a step: its file is left
  // open, what its flusher had not written is lost, the others play on. -1: none.
  int killed_rank = -1;
  int killed_at_step = 0;
  int killed_after_ms = 0;  // stopped at the step that long first, as a hung rank a watchdog kills
  std::vector<CommDef> comms;
  std::vector<StepItem> step;  // "repeat" already expanded
  std::vector<int> recreate_comms_at_steps;  // all comms destroyed and created again first

  int ranks() const { return nodes * ranks_per_node; }
  int nodeOf(int rank) const { return rank / ranks_per_node; }
};

// Throws ScenarioError naming origin (the file) and the offending place.
Scenario parseScenario(std::string_view json_text, const std::string& origin);
Scenario loadScenario(const std::string& path);

}  // namespace commtrace::driver
