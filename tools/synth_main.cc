// commtrace-synth: writes a trace the way the capture library does (records through the
// per-thread rings and the flusher into a .ctrace file), fed by the FSDP-like synthetic
// stream instead of NCCL. It stands in for a real job until the NCCL driver and the demo
// exist (issue 3). Links the capture code statically, not libcommtrace.so.
// With --run-dir it instead writes a whole multi-rank run at full speed (one file per
// rank, encoded directly; see tools/synthetic/run_writer.h): the input of the report
// benchmarks.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <chrono>
#include <thread>
#include <vector>

#include "ringbuffer/ringbuffer.h"
#include "sink/flusher.h"
#include "tools/synthetic/fsdp_stream.h"
#include "tools/synthetic/run_writer.h"

namespace {

int writeRun(const commtrace::synthetic::SyntheticRunOptions& options) {
  commtrace::synthetic::SyntheticRunTruth truth;
  std::string error;
  if (!commtrace::synthetic::writeSyntheticRun(options, truth, error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  std::printf("wrote %s: %llu files, %llu collective records (%llu instances), %llu p2p records, %llu kernel records, %llu bytes\n",
              options.dir.c_str(), static_cast<unsigned long long>(truth.files),
              static_cast<unsigned long long>(truth.coll_records), static_cast<unsigned long long>(truth.coll_instances),
              static_cast<unsigned long long>(truth.p2p_records), static_cast<unsigned long long>(truth.kernel_records),
              static_cast<unsigned long long>(truth.bytes_written));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"commtrace-synth: write a synthetic FSDP-like trace through the real rings and flusher"};
  std::string dir = "commtrace-run";
  int steps = 20, layers = 24, rank = 0, world = 8, threads = 1;
  app.add_option("--dir", dir, "run directory")->capture_default_str();
  app.add_option("--steps", steps, "training steps")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--layers", layers, "layers per step")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--rank", rank, "rank written in the file header")->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--world-size", world, "ranks in the job")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--threads", threads, "producer threads, each with its own stream")->check(CLI::Range(1, 64))->capture_default_str();
  commtrace::synthetic::SyntheticRunOptions run;
  app.add_option("--run-dir", run.dir, "write a whole multi-rank run into this directory instead");
  app.add_option("--ranks", run.ranks, "--run-dir: ranks (one file each)")->check(CLI::Range(1, 65536))->capture_default_str();
  app.add_option("--ranks-per-node", run.ranks_per_node, "--run-dir: ranks per node")->check(CLI::Range(1, 1024))->capture_default_str();
  app.add_option("--collectives", run.collectives_per_rank, "--run-dir: collectives per rank")->capture_default_str();
  std::string shape = "mixed";
  app.add_option("--shape", shape,
                 "--run-dir: mixed (world, per-node tp and cross-node dp communicators, sends/receives) or ddp (one world "
                 "communicator, bucketed AllReduce)")
      ->check(CLI::IsMember({"mixed", "ddp"}))
      ->capture_default_str();
  app.add_option("--flush-ms", run.flush_period_ms,
                 "--run-dir: cut a chunk every this many ms of a rank's clock, as the library's flusher does (0: only "
                 "every 16,384 records)")
      ->capture_default_str();
  app.add_option("--in-flight", run.in_flight_ops,
                 "--run-dir: write a run still being written: no file closed, rank r's last r % (N + 1) collectives not "
                 "in its file yet (0: a finished run)")
      ->capture_default_str();
  app.add_option("--straggler-rank", run.straggler_rank, "--run-dir: the rank that arrives late (-1: none)")->capture_default_str();
  app.add_option("--kernels", run.kernels_per_collective,
                 "--run-dir: CUPTI attached: this many compute kernels after each collective starts, back to back to the "
                 "end of its slot, written a flush period late as the CUPTI face hands them over (0: no CUPTI)")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  run.shape = shape == "ddp" ? commtrace::synthetic::JobShape::kDdp : commtrace::synthetic::JobShape::kMixed;
  if (!run.dir.empty()) return writeRun(run);

  commtrace::FlusherOptions options;
  options.dir = dir;
  options.identity.rank = rank;
  options.identity.world_size = world;
  commtrace::Flusher flusher(options);
  if (!flusher.start()) return 1;

  std::vector<std::thread> producers;
  for (int t = 0; t < threads; ++t) {
    producers.emplace_back([&, t] {
      commtrace::synthetic::FsdpStream stream({rank, world, layers, static_cast<uint64_t>(t + 1)});
      const size_t ops = stream.opsPerStep() * static_cast<size_t>(steps);
      // Paced at 500k records/s per thread: far above what NCCL produces, and within what
      // the flusher drains, so a healthy run shows no drops.
      auto next_batch = std::chrono::steady_clock::now();
      for (size_t i = 0; i < ops; ++i) {
        if (i % 500 == 0) std::this_thread::sleep_until(next_batch += std::chrono::milliseconds(1));
        commtrace::record(stream.next());
      }
    });
  }
  for (auto& p : producers) p.join();
  flusher.stop();
  const auto stats = flusher.stats();
  std::printf("wrote %s: %llu records in %llu chunks, %llu bytes\n", flusher.path().c_str(),
              static_cast<unsigned long long>(stats.records_written),
              static_cast<unsigned long long>(stats.chunks_written),
              static_cast<unsigned long long>(stats.bytes_written));
  return stats.records_written > 0 ? 0 : 1;
}
