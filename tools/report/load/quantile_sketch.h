// A quantile summary whose states merge, for analyses that stream a run instead of holding
// all of it: exact while small, a log-bucketed histogram past that (DDSketch, Masson, Rim
// and Lee, VLDB 2019).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

namespace commtrace::report {

// Quantiles of non-negative values (durations, bandwidths, sizes). Up to kExactLimit distinct
// values it keeps each with its count and answers as percentile() in stats.h does (message
// sizes and quantized GPU durations repeat: a million AllReduces of one size stay exact);
// past that it answers within
// kRelativeError of that answer, in memory that grows with the values' range and not their
// number: one bucket per factor of about 1.02, so ~1,730 for 1e-3 .. 1e12 and never more than
// ~73,000 for the whole range of a double. A merge gives the same state whatever the order and
// grouping of the parts, so shards can be summarised apart and combined.
class QuantileSketch {
 public:
  static constexpr size_t kExactLimit = 4096;
  // The bound the report states beside a figure whose sketch is not exact().
  static constexpr double kRelativeError = 0.01;

  // Negative, NaN and infinite values are counted in ignored() and otherwise dropped.
  void add(double value);
  void merge(const QuantileSketch& other);

  // Nearest-rank quantile for p in [0, 1] (clamped); 0 when count() is 0.
  double quantile(double p) const;
  uint64_t count() const { return count_; }
  uint64_t ignored() const { return ignored_; }
  bool exact() const;
  // Non-empty histogram buckets, what the sketch's memory grows with; 0 while exact().
  size_t buckets() const;
  // A shard's state (tools/report/shard/).
  template <class Archive>
  void serialize(Archive& ar) {
    ar(count_, ignored_, bucketed_, values_, buffered_, zeros_, buckets_);
  }

 private:
  // While exact, adds wait in a buffer and are sorted into values_ together: one insert into
  // the sorted values per add moved half of them each time. The buffer holds an eighth of the
  // values held, at least kFewestBuffered and at most kBuffered: each add still moves about
  // eight values, and a small sketch's buffer stays small (a 16,384-rank report holds five
  // sketches per process, whose buffers of 128 could take 160 MB).
  static constexpr size_t kBuffered = 128;
  static constexpr size_t kFewestBuffered = 8;
  void mergeBuffered();
  // The sketch as read: itself, or a copy with its buffered values merged.
  template <class Read>
  auto read(Read reader) const;
  void moveValuesToBuckets();
  void addToBuckets(double value, uint64_t n);

  uint64_t count_ = 0;
  uint64_t ignored_ = 0;

  bool bucketed_ = false;
  std::vector<std::pair<double, uint64_t>> values_;  // while exact(): (value, count), sorted by value
  std::vector<std::pair<double, uint64_t>> buffered_;  // while exact(): added since the last merge
  // Once past exact(): zero has no logarithm, so it is counted apart from the buckets.
  uint64_t zeros_ = 0;
  std::map<int, uint64_t> buckets_;  // index i holds values in (gamma^(i-1), gamma^i]
};

// Quantiles of values of either sign (differences of durations): the negative ones are kept
// negated in a second QuantileSketch. The same exactness and error bound.
class SignedQuantileSketch {
 public:
  void add(double value) { value < 0 ? negated_.add(-value) : positive_.add(value); }
  void merge(const SignedQuantileSketch& other) {
    positive_.merge(other.positive_);
    negated_.merge(other.negated_);
  }
  uint64_t count() const { return positive_.count() + negated_.count(); }
  bool exact() const { return positive_.exact() && negated_.exact(); }
  // Nearest-rank quantile, as QuantileSketch::quantile.
  double quantile(double p) const;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(positive_, negated_);
  }

 private:
  QuantileSketch positive_, negated_;
};

}  // namespace commtrace::report
