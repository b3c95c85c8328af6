#include "tools/report/load/quantile_sketch.h"

#include <algorithm>
#include <cmath>

#include "tools/report/load/stats.h"

namespace commtrace::report {
namespace {

constexpr double kGamma = (1 + QuantileSketch::kRelativeError) / (1 - QuantileSketch::kRelativeError);
const double kLogGamma = std::log(kGamma);

int bucketOf(double positive) { return static_cast<int>(std::ceil(std::log(positive) / kLogGamma)); }

// The point of (gamma^(i-1), gamma^i] whose relative distance to both ends is kRelativeError.
double bucketValue(int index) { return 2 * std::pow(kGamma, index) / (kGamma + 1); }

}  // namespace

void QuantileSketch::add(double value) {
  if (!(value >= 0) || std::isinf(value)) {  // !(>= 0) is also true for NaN
    ++ignored_;
    return;
  }
  ++count_;
  if (bucketed_) addToBuckets(value, 1);
  else addExact(value, 1);
}

void QuantileSketch::addExact(double value, uint64_t n) {
  const auto it = std::lower_bound(values_.begin(), values_.end(), value,
                                   [](const std::pair<double, uint64_t>& v, double x) { return v.first < x; });
  if (it != values_.end() && it->first == value) {
    it->second += n;
    return;
  }
  values_.insert(it, {value, n});
  if (values_.size() > kExactLimit) moveValuesToBuckets();
}

void QuantileSketch::merge(const QuantileSketch& other) {
  if (&other == this) {  // inserting a vector into itself is undefined
    const QuantileSketch copy = other;
    merge(copy);
    return;
  }
  count_ += other.count_;
  ignored_ += other.ignored_;
  if (other.bucketed_ && !bucketed_) moveValuesToBuckets();
  // An exact other has only values_, a bucketed one only zeros_ and buckets_.
  for (const auto& [value, n] : other.values_) {
    if (bucketed_) addToBuckets(value, n);
    else addExact(value, n);
  }
  zeros_ += other.zeros_;
  for (const auto& [index, n] : other.buckets_) buckets_[index] += n;
}

double QuantileSketch::quantile(double p) const {
  if (count_ == 0) return 0;
  p = std::clamp(p, 0.0, 1.0);
  // The rank percentile() picks, so the two modes answer the same question.
  const uint64_t rank = static_cast<uint64_t>(std::ceil(p * static_cast<double>(count_)));
  const uint64_t k = rank == 0 ? 0 : rank - 1;
  if (!bucketed_) {
    uint64_t seen = 0;
    for (const auto& [value, n] : values_) {
      seen += n;
      if (seen > k) return value;
    }
    return values_.back().first;
  }
  if (k < zeros_) return 0;
  auto bucket = buckets_.begin();
  for (uint64_t seen = zeros_ + bucket->second; seen <= k; seen += bucket->second) ++bucket;
  return bucketValue(bucket->first);
}

void QuantileSketch::moveValuesToBuckets() {
  bucketed_ = true;
  for (const auto& [value, n] : values_) addToBuckets(value, n);
  values_ = {};  // frees the memory; clear() would keep it
}

void QuantileSketch::addToBuckets(double value, uint64_t n) {
  if (value == 0) {
    zeros_ += n;
    return;
  }
  buckets_[bucketOf(value)] += n;
}

double SignedQuantileSketch::quantile(double p) const {
  const uint64_t n = count(), n_negative = negated_.count();
  if (n == 0) return 0;
  const uint64_t rank = std::clamp<uint64_t>(static_cast<uint64_t>(std::ceil(std::clamp(p, 0.0, 1.0) * static_cast<double>(n))), 1, n);
  // The r-th smallest of a sketch's values, asked by a fraction that nearest rank turns back into r.
  auto nth = [](const QuantileSketch& s, uint64_t r) { return s.quantile((static_cast<double>(r) - 0.5) / static_cast<double>(s.count())); };
  return rank <= n_negative ? -nth(negated_, n_negative - rank + 1) : nth(positive_, rank - n_negative);
}

}  // namespace commtrace::report
