// Puts a stream that comes almost in order back in order: items are held sorted, the
// earliest taken out once enough are held that no later arrival can still come before it.
// Records are written as ops complete, so an op's record seldom arrives out of program
// order: an item that comes in order is appended (a heap paid some 14 comparisons for
// each, and its cache misses, on 16,384 held), one that does not is inserted where it
// belongs. Equal items leave in arrival order. The items live in one ring that grows to
// the most ever held and is then reused: no allocation per item (a deque's block churn
// fragmented the heap over a long run).
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace commtrace::report {

// later(a, b): a comes after b.
template <class T, class Later>
class ReorderBuffer {
 public:
  explicit ReorderBuffer(Later later) : later_(later) {}

  void push(const T& item) {
    if (size_ == ring_.size()) grow();
    size_t at = size_;
    // From the back: in order, the first comparison stops it.
    while (at > 0 && later_(slot(at - 1), item)) {
      slot(at) = slot(at - 1);
      --at;
    }
    slot(at) = item;
    ++size_;
  }
  const T& earliest() const { return ring_[head_]; }
  T popEarliest() {
    T earliest = ring_[head_];
    head_ = head_ + 1 == ring_.size() ? 0 : head_ + 1;
    --size_;
    return earliest;
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  T& slot(size_t i) {
    const size_t at = head_ + i;
    return ring_[at < ring_.size() ? at : at - ring_.size()];
  }
  void grow() {
    std::vector<T> bigger(std::max<size_t>(16, 2 * ring_.size()));
    for (size_t i = 0; i < size_; ++i) bigger[i] = slot(i);
    ring_.swap(bigger);
    head_ = 0;
  }

  Later later_;
  std::vector<T> ring_;
  size_t head_ = 0, size_ = 0;
};

}  // namespace commtrace::report
