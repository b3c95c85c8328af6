// The parallelism table's rows (analyses/parallelism.h).
// Plain data: times in microseconds, bandwidths in GB/s (1e9 bytes/s, as nccl-tests prints them).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace commtrace::report {

// One shape of communicator and the parallelism its ops show (analyses/parallelism.h).
struct ParallelismRow {
  std::string kinds;     // the patterns as short words: "tp", "ddp", "fsdp", "zero", "pp", "ep", "other"; joined by ","
  int groups = 0;        // communicators of this shape
  int size = 0;          // ranks in each
  bool within_host = false;  // each inside one host
  // What each ran, most used first: per func its count (per step when `per_step`) and the
  // size bucket most of them fell in.
  struct FuncUse {
    std::string func;
    double count = 0;
    std::string bucket;
  };
  std::vector<FuncUse> uses;
  bool per_step = false;
  std::vector<std::string> comm_labels;  // its communicators'
  // In words (parallelismWords(): the words layer fills them).
  std::string pattern;   // "tensor parallel", "data parallel (DDP)", ...; several joined by " + "
  std::string comms;     // the first few labels
  std::string evidence;  // what each ran per step (or in all): funcs, counts, sizes
};

}  // namespace commtrace::report
