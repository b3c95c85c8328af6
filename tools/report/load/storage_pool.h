// Vector storage handed back and taken again, for an analysis that holds many short-lived
// lists of a few widths (the root-cause walk's waiting instances: 8 members, 2,048, 16,384).
// Made and freed per list, their storage churned malloc: a list of a few members is taken
// from a free list, and a wide one of 16,384 members (1.5 MB) was allocated, grown and
// freed again at every instance of a world communicator.
//
// Small storage comes in powers of two up to kSmallMost elements, each width kept up to
// kSmallKept times; wide storage (more than kSmallMost) is kept up to kWideKeptBytes, the
// widest first, and a request takes the narrowest that fits. (Four wide ones kept were too
// few: a 16,384-rank run's data-parallel instances of 2,048 members wait by the hundred and
// are released together.) What is kept is bounded: at most kSmallKept * (2 * kSmallMost)
// elements small, and kWideKeptBytes, or the widest list alone, wide.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <vector>

namespace commtrace::report {

template <class T>
class StoragePool {
 public:
  static constexpr size_t kSmallMost = 16;
  static constexpr size_t kSmallKept = 16384;
  static constexpr size_t kWideKeptBytes = size_t{8} << 20;

  // `into` emptied, with room for n: its own storage if it has the room and not more than
  // twice it (a list kept long must not hold a wide one's storage), else storage returned
  // earlier (its own given back), else new.
  void take(std::vector<T>& into, size_t n) {
    into.clear();
    if (into.capacity() >= n && into.capacity() <= std::max(kSmallMost, 2 * n)) return;
    give(into);
    if (n <= kSmallMost) {
      const size_t width = std::bit_ceil(std::max<size_t>(n, 1));
      std::vector<std::vector<T>>& kept = small_[widthClass(width)];
      if (!kept.empty()) {
        into.swap(kept.back());
        kept.pop_back();
      }
      into.reserve(width);
      return;
    }
    auto fits = wide_.end();
    for (auto it = wide_.begin(); it != wide_.end(); ++it)
      if (it->capacity() >= n && (fits == wide_.end() || it->capacity() < fits->capacity())) fits = it;
    if (fits != wide_.end()) {
      wide_bytes_ -= fits->capacity() * sizeof(T);
      into.swap(*fits);
      wide_.erase(fits);
    }
    into.reserve(n);
  }

  // Takes `storage` back (its elements dropped), leaving it empty with no storage.
  void give(std::vector<T>& storage) {
    storage.clear();
    const size_t capacity = storage.capacity();
    if (capacity == 0) return;
    if (capacity <= kSmallMost) {
      std::vector<std::vector<T>>& kept = small_[widthClass(std::bit_floor(capacity))];
      if (kept.size() < kSmallKept) kept.emplace_back().swap(storage);
    } else {
      wide_.emplace_back().swap(storage);
      wide_bytes_ += capacity * sizeof(T);
      while (wide_.size() > 1 && wide_bytes_ > kWideKeptBytes) {
        const auto narrowest = std::min_element(wide_.begin(), wide_.end(), [](const auto& a, const auto& b) { return a.capacity() < b.capacity(); });
        wide_bytes_ -= narrowest->capacity() * sizeof(T);
        wide_.erase(narrowest);
      }
    }
    std::vector<T>().swap(storage);  // what was not kept
  }

  // Frees everything kept.
  void clear() {
    for (std::vector<std::vector<T>>& kept : small_) std::vector<std::vector<T>>().swap(kept);
    std::vector<std::vector<T>>().swap(wide_);
    wide_bytes_ = 0;
  }

  size_t keptSmall() const {
    size_t n = 0;
    for (const std::vector<std::vector<T>>& kept : small_) n += kept.size();
    return n;
  }
  size_t keptWide() const { return wide_.size(); }
  size_t keptWideBytes() const { return wide_bytes_; }

 private:
  static size_t widthClass(size_t power_of_two) { return static_cast<size_t>(std::countr_zero(power_of_two)); }

  std::array<std::vector<std::vector<T>>, std::countr_zero(kSmallMost) + 1> small_;  // by log2 of their capacity
  std::vector<std::vector<T>> wide_;
  size_t wide_bytes_ = 0;
};

}  // namespace commtrace::report
