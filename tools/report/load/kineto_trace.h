// PyTorch profiler (Kineto) traces as a second input: the Chrome-trace JSON files
// torch.profiler writes, one per rank (`.json` or `.json.gz`), read onto the same RunModel
// as commtrace's own files, as HTA reads them.
//
// What a Kineto trace gives, and where it goes:
//   - GPU kernels (cat "kernel"), memcpys and memsets: the kernel tallies, and the compute
//     kernels (every kernel not NCCL's) on the rank's GPU timeline.
//   - NCCL's kernels: one collective per kernel, on a communicator per process group (its
//     "Process Group Name" when Kineto recorded it, else the kernel's stream), with func,
//     algorithm, protocol and datatype from the kernel name and sizes from the NCCL metadata
//     PyTorch adds ("In msg nelems", "dtype", "Process Group Ranks") when present.
//   - `ProfilerStep#N` and other user annotations: NVTX-like phases, so steps are PyTorch's.
// Kineto puts every time on one clock (the host's, in microseconds), so no clock fitting is
// needed. A trace shows one rank's side only: its communicators are `one_rank_view`, and
// analyses that join ranks (stragglers, mismatches, clock alignment) find nothing to join.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "tools/report/load/run_model.h"

namespace commtrace::report {

// A file named *.json or *.json.gz (its content is checked when read).
bool looksLikeKinetoTrace(const std::string& path);

// Reads every file into run (which must be empty); false with the reasons on err when none
// could be read. Files that are not Kineto traces are listed in run.skipped_files.
bool loadKinetoRun(const std::vector<std::string>& files, RunModel& run, std::ostream& err);

}  // namespace commtrace::report
