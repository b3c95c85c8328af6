// Finds the collective instance a rank's record belongs to, millions of times per run.
// NCCL's seqNumber counts up from 0 per (communicator, func) and our op_index per
// communicator, so both are near-dense: they index blocks of plain slots (no hashing). A
// block whose instances have all been handed on is freed, so what is held follows the
// instances still open, not the run's length (a vector of every instance ever seen took
// 4 bytes each: 80 MB for a 64-rank run of a million steps). A value far beyond what has
// been seen (damage, a foreign counter) goes to a hash map instead of growing the blocks
// without bound. A (communicator, func) starts with a short list and takes blocks only past
// kFew instances: a file of 100,000 communicators with an op each held a 4 KB block for
// each (400 MB).
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <unordered_map>
#include <vector>

#include "tools/report/load/run_model.h"

namespace commtrace::report {

class InstanceIndex {
 public:
  static constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();  // never stored
  static constexpr uint32_t kClosed = kNone - 1;                           // handed on whole
  static constexpr uint32_t kByOpIndex = kNone;  // Key::func of graph-captured ops

  // (comm, func, seq); graph-captured ops, whose replays repeat the seq, by (comm, op_index)
  // with func kByOpIndex.
  struct Key {
    uint32_t comm;
    uint32_t func;
    uint64_t n;
    bool operator==(const Key&) const = default;
  };

  // The instance number stored for key: kNone until store(), kClosed after close().
  uint32_t find(const Key& key);
  void store(const Key& key, uint32_t instance);
  // The key's instance was handed on whole: a later record for it repeats one already read.
  void close(const Key& key);

  // Slots held in blocks now (for tests: it must not grow with the run).
  size_t heldSlots() const { return live_blocks_ * kBlockSlots; }

 private:
  static constexpr uint32_t kBlockSlots = 1024;
  struct Block {
    std::array<uint32_t, kBlockSlots> slots;
    uint32_t closed = 0;
    Block() { slots.fill(kNone); }
  };
  struct BlockRef {
    std::unique_ptr<Block> block;  // null: untouched, or retired
    bool retired = false;          // every slot closed, the block freed
  };
  static constexpr size_t kFew = 32;
  struct Dense {
    std::vector<BlockRef> blocks;
    std::vector<std::pair<uint64_t, uint32_t>> few;  // (n, instance) until the blocks are taken
    bool in_blocks = false;
  };
  struct PerComm {
    std::vector<Dense> by_func_seq;  // [func][seq / kBlockSlots]
    Dense by_op_index;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<uint64_t>()(k.n * 0x9E3779B97F4A7C15ull ^ (uint64_t{k.comm} << 32 | k.func));
    }
  };

  Dense& denseOf(const Key& key);
  static bool inDenseRange(const Dense& dense, uint64_t n);
  // The slot of n in the few, or null.
  static uint32_t* fewSlot(Dense& dense, uint64_t n);
  // Past kFew: the few moved into blocks.
  void takeBlocks(Dense& dense, const Key& key);
  void storeInBlocks(Dense& dense, const Key& key, uint32_t instance);

  std::vector<PerComm> comms_;
  std::unordered_map<Key, uint32_t, KeyHash> sparse_;
  size_t live_blocks_ = 0;
};

}  // namespace commtrace::report
