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
  return n < dense.size() * kBlockSlots + kMaxDenseStep;
}

uint32_t InstanceIndex::find(const Key& key) {
  const Dense& dense = denseOf(key);
  const uint64_t b = key.n / kBlockSlots;
  if (b < dense.size()) {
    if (dense[b].retired) return kClosed;
    if (dense[b].block != nullptr && dense[b].block->slots[key.n % kBlockSlots] != kNone)
      return dense[b].block->slots[key.n % kBlockSlots];
  }
  if (sparse_.empty()) return kNone;
  const auto it = sparse_.find(key);
  return it == sparse_.end() ? kNone : it->second;
}

void InstanceIndex::store(const Key& key, uint32_t instance) {
  Dense& dense = denseOf(key);
  if (!inDenseRange(dense, key.n)) {
    sparse_[key] = instance;
    return;
  }
  const uint64_t b = key.n / kBlockSlots;
  if (b >= dense.size()) dense.resize(b + 1);
  BlockRef& ref = dense[b];
  if (ref.block == nullptr) {
    ref.block = std::make_unique<Block>();
    ++live_blocks_;
  }
  ref.block->slots[key.n % kBlockSlots] = instance;
}

void InstanceIndex::close(const Key& key) {
  Dense& dense = denseOf(key);
  const uint64_t b = key.n / kBlockSlots;
  if (b < dense.size() && dense[b].block != nullptr && dense[b].block->slots[key.n % kBlockSlots] != kNone) {
    BlockRef& ref = dense[b];
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
