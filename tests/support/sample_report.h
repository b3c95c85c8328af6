// A Report filled by hand with every section the writers print, including names that need
// quoting or escaping, an overlap row that is not available, and stragglers deliberately out
// of order (writers that promise an order must impose it).
#pragma once

#include <string>

#include "tools/report/report.h"

namespace commtrace::testutil {

inline constexpr const char* kTrickyName = "tp,\"0\"\n<b>&x</b>";  // comma, quotes, newline, markup

inline report::Report sampleReport() {
  using namespace report;
  Report r;
  r.run = {.dir = "/runs/job-7", .ranks = 4, .processes = 4, .hosts = 2, .communicators = 2, .ops = 130,
           .collective_instances = 120, .p2p_transfers = 10, .dropped_records = 3, .untracked_events = 0, .files = 5,
           .damaged_files = 1, .problems = {"commtrace: /runs/job-7/notes.txt: not a commtrace trace file"}, .missing_ranks = {}};
  r.clocks = {.fits = {{0, "node0", 0, 0, 0.02, 20, 0, false, true}, {1, "node0", 1.5, 0.1, 0.03, 20, 1, true, true},
                       {2, "node1", 3217.4, 6.5, 0.4, 20, 0, true, true}, {3, "node1", 0, 0, 0, 0, 0, false, false}},
              .residual_us_p50 = 0.05, .residual_us_max = 0.9, .cpu_gpu_mapped = false};
  r.communicators = {{0x1234abcd5678ef00ull, "world", 4, {0, 1, 2, 3}, 2, 100}, {0x42, kTrickyName, 2, {0, 1}, 1, 20}};
  r.bandwidth = {
      {0x1234abcd5678ef00ull, "world", "AllReduce", 4u << 20, "4-8 MiB", "RING", "SIMPLE", 60, 60, 350.5, 400.25, 11.97, 17.95, 0.01, ""},
      {0x1234abcd5678ef00ull, "world", "AllReduce", 64u << 10, "64-128 KiB", "RING", "LL128", 20, 20, 20, 25, 3.28, 4.92, 0, ""},
      {0x42, kTrickyName, "AllGather", 8u << 20, "8-16 MiB", "RING", "SIMPLE", 20, 20, 700, 720, 11.98, 5.99, 0, ""},
      {0x42, kTrickyName, "Broadcast", 0, "0 B", "RING", "LL", 20, 20, 9, 11, 0, 0, 0, "size not recorded (datatype Unknown)"}};
  r.matrix.ranks = 4;
  r.matrix.dense = true;
  r.matrix.bytes = {{0, 100, 0, 7}, {5, 0, 4096, 0}, {0, 0, 0, 1u << 20}, {9, 0, 0, 0}};
  r.matrix.p2p_bytes = {{0, 0, 0, 7}, {0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}};
  r.matrix.time_us = {{0, 1, 0, 2}, {1, 0, 3, 0}, {0, 0, 0, 4}, {5, 0, 0, 0}};
  r.matrix.model = "ring: each rank sends to its successor";
  r.matrix.slices = {{"all", 0, "", {{2, 3, 1u << 20, 0, 4, 262.1, false}, {0, 3, 7, 7, 2, 0.0035, true}}},
                     {"AllReduce", 0, "AllReduce", {{2, 3, 1u << 20, 0, 4, 262.1, false}}}};
  r.overlap = {{.rank = 0, .available = true, .comm_us = 2000, .overlapped_us = 500, .exposed_us = 1500, .idle_us = 300,
                .overlap_pct = 25, .step_source = "inferred", .step_count = 2, .mean_step_us = 5000,
                .steps = {{.step = 0, .last_step = 0, .start_us = 0, .comm_us = 1000, .overlapped_us = 250, .exposed_us = 750, .idle_us = 100},
                          {.step = 1, .last_step = 1, .start_us = 5000, .comm_us = 1000, .overlapped_us = 250, .exposed_us = 750, .idle_us = 200}}},
               {.rank = 1, .available = false, .reason = "no compute-kernel records: CUPTI was not attached", .comm_us = 1800,
                .step_source = "none"}};
  r.peer_waits = {{.rank = 1, .peer = 0, .transfers = 10, .waited = 8, .wait_us = 400, .steps = 2, .wait_per_step_us = 200, .step_share_pct = 4},
                  {.rank = 3, .peer = 2, .transfers = 4, .waited = 1, .wait_us = 3.5}};
  const KernelRow gemm{-1, "void gemm_kernel<float, 128>(float const*, float*)", "computation", 2, 40, 8000, 200, 260, 61.5};
  r.kernels = {.top = {gemm, {-1, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "communication", 2, 40, 5000, 125, 400, 38.5}},
               .per_rank = {{0, gemm.name, gemm.type, 1, 20, 4000, 200, 260, 60}},
               .per_rank_by_count = {{0, "Memcpy HtoD", "memory", 1, 90, 45, 0.5, 2, 0.7}},
               .types = {{0, 4000, 2500, 45}, {1, 4000, 2500, 0}}};
  r.cuda_sync = {{.rank = 0, .host = "node0", .blocked_us = 2600.5,
                  .calls = {{"cudaStreamSynchronize", {3, 1, 2500.5, 800, 1200.25},
                             {{0x5a000, {2, 0, 2000, 800, 1200.25}}, {2, {1, 1, 500.5, 500.5, 500.5}}}},
                            {"cudaDeviceSynchronize", {1, 0, 100, 100, 100}, {}}}},
                 {.rank = 1, .host = "node0", .blocked_us = 40,
                  .calls = {{"cudaStreamSynchronize", {1, 0, 40, 40, 40}, {{0, {1, 0, 40, 40, 40}}}}}}};
  r.stragglers.ranks = {  // as the analysis orders them: by wait caused, most first
      {.rank = 2, .host = "node1", .instances = 100, .wait_caused_us = 12000.5, .late_fraction = 0.9, .mean_lateness_us = 1200,
       .cls = "compute", .confidence = 0.95, .flagged = true, .basis = StragglerBasis::kComputeKernels, .chance_fraction = 0.25,
       .z = 14.9, .median_wait_caused_us = 55, .gap_ops = 90, .gap_sampled = 90, .gap_us_p50 = 2400, .peer_gap_us_p50 = 1200,
       .gap_excess_us_p50 = 1200, .late_lateness_us_p50 = 1250, .compute_share = 0.92},
      {1, "node0", 100, 50, 0.1, 2, "none", 0.2, false},
      {0, "node0", 100, 10, 0.05, 1, "none", 0.1, false}};
  r.stragglers.hosts = {{"node1", {2, 3}, 12000.5, 0.45}, {"node0", {0, 1}, 60, 0.075}};
  r.stragglers.comms = {{0x1234abcd5678ef00ull, "world", 2, 12000.5, 12100, 100}};
  r.stragglers.links = {{2, 3, "node1 <-> node1", false, 3.1, 140, 40, 40, 6, 0.9, true}};
  r.stragglers.heatmap = {.ranks = {0, 1, 2, 3}, .axis = "aligned time", .bin_us = 1000, .start_us = 0,
                          .mean_lateness_us = {{0, 1, 2}, {1, 0, -1}, {1200, 1100, 1300}, {0, 2, 1}}};
  r.mismatches = {{0x1234abcd5678ef00ull, "world", "AllReduce", 57, {3}, false, "missing", "rank 3 never issued AllReduce seq 57"}};
  r.mismatches_total = 1;
  r.findings = {"Rank 2 (node1) is the straggler: it kept the others waiting 12 ms in total (compute, confidence 0.95).",
                "The link 2 <-> 3 is slow: 3.1 GB/s against 140 GB/s for its kind."};
  return r;
}

}  // namespace commtrace::testutil
