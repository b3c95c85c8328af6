#include "tools/report/load/instance_index.h"

namespace commtrace::report {
namespace {

// How far past the dense range a value may land and still extend it: generous for a
// counter that skips (a rank that missed ops), small against a corrupted 64-bit value.
constexpr uint64_t kMaxDenseStep = 1 << 20;

}  // namespace

uint32_t& InstanceIndex::slot(std::vector<uint32_t>& dense, const Key& key) {
  if (key.n < dense.size()) return dense[key.n];
  if (key.n < dense.size() + kMaxDenseStep) {
    dense.resize(key.n + 1, kNone);
    return dense[key.n];
  }
  return sparse_.try_emplace(key, kNone).first->second;
}

uint32_t& InstanceIndex::bySeq(uint32_t comm, NameId func, uint64_t seq) {
  if (comm >= comms_.size()) comms_.resize(comm + 1);
  auto& per_func = comms_[comm].by_func_seq;
  if (func >= per_func.size()) per_func.resize(func + 1);
  return slot(per_func[func], {comm, func, seq});
}

uint32_t& InstanceIndex::byOpIndex(uint32_t comm, uint64_t op_index) {
  if (comm >= comms_.size()) comms_.resize(comm + 1);
  return slot(comms_[comm].by_op_index, {comm, kNone, op_index});
}

}  // namespace commtrace::report
