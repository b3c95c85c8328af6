// Finds the collective instance a rank's record belongs to, millions of times per run.
// NCCL's seqNumber counts up from 0 per (communicator, func) and our op_index per
// communicator, so both are near-dense: they index plain vectors (4 bytes per instance, no
// hashing). A value far beyond what has been seen (damage, a foreign counter) goes to a
// hash map instead of growing the vector without bound.
#pragma once

#include <cstdint>
#include <limits>
#include <unordered_map>
#include <vector>

#include "tools/report/run_model.h"

namespace commtrace::report {

class InstanceIndex {
 public:
  static constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

  // The slot holding the instance number of (comm, func, seq): kNone until the caller
  // stores one. Valid until the next call.
  uint32_t& bySeq(uint32_t comm, NameId func, uint64_t seq);
  // The same for graph-captured ops, whose replays repeat the seq: (comm, op_index).
  uint32_t& byOpIndex(uint32_t comm, uint64_t op_index);

 private:
  struct Key {
    uint32_t comm;
    uint32_t func;  // kNone: keyed by op_index
    uint64_t n;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<uint64_t>()(k.n * 0x9E3779B97F4A7C15ull ^ (uint64_t{k.comm} << 32 | k.func));
    }
  };
  struct PerComm {
    std::vector<std::vector<uint32_t>> by_func_seq;  // [func][seq]
    std::vector<uint32_t> by_op_index;
  };

  uint32_t& slot(std::vector<uint32_t>& dense, const Key& key);

  std::vector<PerComm> comms_;
  std::unordered_map<Key, uint32_t, KeyHash> sparse_;
};

}  // namespace commtrace::report
