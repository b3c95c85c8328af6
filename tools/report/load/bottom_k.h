// The items of the k smallest hashes seen (bottom-k sampling): a uniform sample that is
// the same whatever order the items come in, and that shards merge into. A max-heap of
// (hash, seat) over the items' seats: a newcomer lighter than the heaviest takes over the
// heaviest's seat, its storage with it (no allocation once the sample is full).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace commtrace::report {

template <class Item>
class BottomK {
 public:
  // Whether an item of this hash is kept, with at most k kept.
  bool keeps(uint64_t hash, size_t k) const { return items_.size() < k || (!heaviest_.empty() && hash < heaviest_.front().first); }
  // The seat for an item of this hash (keeps() said yes): a new one, or the heaviest's, its
  // fields to fill.
  Item& seatFor(uint64_t hash, size_t k) {
    uint32_t seat = static_cast<uint32_t>(items_.size());
    if (items_.size() < k) {
      items_.emplace_back();
    } else {
      std::pop_heap(heaviest_.begin(), heaviest_.end());
      seat = heaviest_.back().second;
      heaviest_.pop_back();
    }
    heaviest_.emplace_back(hash, seat);
    std::push_heap(heaviest_.begin(), heaviest_.end());
    return items_[seat];
  }
  // Keeps the item (a shard's, merged in) if its hash is among the k smallest.
  void offer(uint64_t hash, size_t k, Item item) {
    if (keeps(hash, k)) seatFor(hash, k) = std::move(item);
  }
  // Keeps only the k smallest (a sample cut to a smaller size: the same as if it had been
  // kept at k from the start).
  void trim(size_t k) {
    if (items_.size() <= k) return;
    while (heaviest_.size() > k) {
      std::pop_heap(heaviest_.begin(), heaviest_.end());
      heaviest_.pop_back();
    }
    std::vector<Item> kept;
    kept.reserve(heaviest_.size());
    for (auto& [hash, seat] : heaviest_) {
      kept.push_back(std::move(items_[seat]));
      seat = static_cast<uint32_t>(kept.size() - 1);
    }
    items_ = std::move(kept);
  }
  // The kept items, in no order.
  const std::vector<Item>& items() const { return items_; }
  std::vector<Item>& items() { return items_; }
  template <class Archive>
  void serialize(Archive& ar) {
    ar(items_, heaviest_);
  }

 private:
  std::vector<Item> items_;
  std::vector<std::pair<uint64_t, uint32_t>> heaviest_;  // a max-heap of (hash, seat in items_)
};

}  // namespace commtrace::report
