// Writes a whole multi-rank run directory fast, for `commtrace report` benchmarks and
// tests: one .ctrace file per rank with a real FileHeader, CommInfo records, collectives
// and sends/receives, encoded straight with the sink's ChunkEncoder and TraceFile (no
// rings, no paced flusher), so 64 ranks x 100,000 collectives take seconds to write.
//
// The job, by shape. kMixed: nodes of `ranks_per_node` ranks; communicators "world",
// "tp.<node>" (the ranks of one node) and "dp.<local rank>" (one rank per node). Every step
// each rank issues two AllReduces on its tp communicator, an AllGather and a ReduceScatter
// on its dp communicator (FSDP's: one layer's 1 MiB of parameters sharded across the
// copies, so that the transfer fits its slot however many nodes) and an AllReduce on world; every 4th step it then also sends to
// the rank `ranks_per_node` ahead and receives from the one behind (world communicator).
// kDdp: the most common shape, plain data parallelism: one "world" communicator and,
// every step, four bucketed 12.5 MiB AllReduces on it. Ops follow
// a global schedule of fixed slots; each rank arrives with a deterministic jitter, the
// planted straggler arrives `straggler_us` later, and all members of an instance stop
// together after the last possible arrival plus the transfer time. Each node's GPU clock
// has its own offset and drift; times are quantized to the 1024 ns globaltimer tick.
#pragma once

#include <cstdint>
#include <string>

namespace commtrace::synthetic {

enum class JobShape { kMixed, kDdp };

struct SyntheticRunOptions {
  std::string dir;
  JobShape shape = JobShape::kMixed;
  int ranks = 8;
  int ranks_per_node = 8;
  uint64_t collectives_per_rank = 1000;
  int straggler_rank = 3;  // -1: none
  double straggler_us = 300;
  int threads = 2;  // ranks are written in parallel
  // Chunks are cut as the library's flusher cuts them: every this many ms of a rank's CPU
  // clock, and at 16,384 records. 0: only at 16,384 records (each rank's ops of a short,
  // fast run in one chunk: the reader's worst case).
  uint32_t flush_period_ms = 200;
  // > 0: a run still being written: no file has its closing chunk yet, and rank r's last
  // r % (in_flight_ops + 1) collectives are not in its file yet (the truth counts what was
  // written, an instance where its communicator's first member wrote it).
  uint64_t in_flight_ops = 0;
  // > 0: CUPTI is attached: after each collective starts, this many compute kernels run back
  // to back until its slot ends (under the collective, then alone), written as the CUPTI
  // face hands them over, a flush period late; each chunk's clock sample then reads the GPU
  // and CUPTI clocks too.
  uint32_t kernels_per_collective = 0;
};

// What the run holds, for checking a reader against it.
struct SyntheticRunTruth {
  uint64_t files = 0;
  uint64_t coll_records = 0;     // summed over ranks
  uint64_t p2p_records = 0;      // sends + receives
  uint64_t coll_instances = 0;   // distinct (communicator, func, seq)
  uint64_t p2p_transfers = 0;    // send/receive pairs
  uint64_t kernel_records = 0;   // compute kernels
  int communicators = 0;
  uint64_t bytes_written = 0;
};

// false with a "commtrace: ..." message when a file cannot be written.
bool writeSyntheticRun(const SyntheticRunOptions& options, SyntheticRunTruth& truth, std::string& error);

}  // namespace commtrace::synthetic
