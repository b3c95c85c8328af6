// Communication by the native call stack it was issued from (analyses/call_stacks.h).
// Plain data: times in microseconds.
#pragma once

#include <cstdint>
#include <string>

namespace commtrace::report {

// The sampled ops of every rank issued from one call stack, the frames named: which function
// of the program called NCCL. Sampled (COMMTRACE_STACKS): ops, bytes and api_us are estimates,
// each sample standing for the ops its thread issued since its previous one.
struct CallStackRow {
  std::string site;   // the innermost frame: the function that called NCCL, with its line where known
  std::string stack;  // every frame, outermost first, joined by ";" (flame-graph tools' order; a ';' in a name reads ':')
  uint64_t samples = 0;
  uint64_t ops = 0;     // estimated rank-ops
  int ranks = 0;        // ranks with samples of it
  uint64_t bytes = 0;   // estimated payload
  double api_us = 0;    // estimated CPU time inside the NCCL calls
  double ops_share = 0;  // of all the estimated ops, 0..1
};

}  // namespace commtrace::report
