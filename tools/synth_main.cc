// commtrace-synth: writes a trace the way the capture library does (records through the
// per-thread rings and the flusher into a .ctrace file), fed by the FSDP-like synthetic
// stream instead of NCCL. It stands in for a real job until the NCCL driver and the demo
// exist (issue 3). Links the capture code statically, not libcommtrace.so.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <chrono>
#include <thread>
#include <vector>

#include "ringbuffer/ringbuffer.h"
#include "sink/flusher.h"
#include "tools/synthetic/fsdp_stream.h"

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
  CLI11_PARSE(app, argc, argv);

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
