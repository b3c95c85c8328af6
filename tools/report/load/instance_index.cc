#include "tools/report/load/instance_index.h"

namespace commtrace::report {
namespace {

// How far past the dense range a value may land and still extend it: generous for a
// counter that skips (a rank that missed ops), small against a corrupted 64-bit value.
constexpr uint64_t kMaxDenseStep = 1 << 20;

}  // namespace

InstanceIndex::Dense& InstanceIndex::denseOf(const Key& key) {
  if (key.comm >= comms_.size()) comms_.resize(key.comm + 1);
  PerComm& comm = comms_[key.comm];
  if (key.func == kByOpIndex) return comm.by_op_index;
  if (key.func >= comm.by_func_seq.size()) comm.by_func_seq.resize(key.func + 1);
  return comm.by_func_seq[key.func];
}

bool InstanceIndex::inDenseRange(const Dense& dense, uint64_t n) {
  return n < dense.blocks.size() * kBlockSlots + kMaxDenseStep;
}

uint32_t* InstanceIndex::fewSlot(Dense& dense, uint64_t n) {
  for (auto& [at, instance] : dense.few)
    if (at == n) return &instance;
  return nullptr;
}

uint32_t InstanceIndex::find(const Key& key) {
  Dense& dense = denseOf(key);
  if (!dense.in_blocks) {
    if (const uint32_t* slot = fewSlot(dense, key.n)) return *slot;
  } else if (const uint64_t b = key.n / kBlockSlots; b < dense.blocks.size()) {
    const BlockRef& ref = dense.blocks[b];
    if (ref.retired) return kClosed;
    if (ref.block != nullptr && ref.block->slots[key.n % kBlockSlots] != kNone) return ref.block->slots[key.n % kBlockSlots];
  }
  if (sparse_.empty()) return kNone;
  const auto it = sparse_.find(key);
  return it == sparse_.end() ? kNone : it->second;
}

void InstanceIndex::store(const Key& key, uint32_t instance) {
  Dense& dense = denseOf(key);
  if (!dense.in_blocks && dense.few.size() < kFew) {
    dense.few.emplace_back(key.n, instance);
    return;
  }
  if (!dense.in_blocks) takeBlocks(dense, key);
  storeInBlocks(dense, key, instance);
}

void InstanceIndex::takeBlocks(Dense& dense, const Key& key) {
  dense.in_blocks = true;
  for (const auto& [n, instance] : dense.few) storeInBlocks(dense, {key.comm, key.func, n}, instance);
  dense.few = {};
}

// A closed instance stored here (moved from the few) counts toward its block's retirement.
void InstanceIndex::storeInBlocks(Dense& dense, const Key& key, uint32_t instance) {
  if (!inDenseRange(dense, key.n)) {
    sparse_[key] = instance;
    return;
  }
  const uint64_t b = key.n / kBlockSlots;
  if (b >= dense.blocks.size()) dense.blocks.resize(b + 1);
  BlockRef& ref = dense.blocks[b];
  if (ref.block == nullptr) {
    ref.block = std::make_unique<Block>();
    ++live_blocks_;
  }
  ref.block->slots[key.n % kBlockSlots] = instance;
  if (instance == kClosed) ++ref.block->closed;
}

void InstanceIndex::close(const Key& key) {
  Dense& dense = denseOf(key);
  if (!dense.in_blocks) {
    if (uint32_t* slot = fewSlot(dense, key.n)) {
      *slot = kClosed;
      return;
    }
  } else if (const uint64_t b = key.n / kBlockSlots;
             b < dense.blocks.size() && dense.blocks[b].block != nullptr && dense.blocks[b].block->slots[key.n % kBlockSlots] != kNone) {
    BlockRef& ref = dense.blocks[b];
    ref.block->slots[key.n % kBlockSlots] = kClosed;
    if (++ref.block->closed < kBlockSlots) return;
    ref.block.reset();
    ref.retired = true;
    --live_blocks_;
    return;
  }
  sparse_[key] = kClosed;
}

}  // namespace commtrace::report
