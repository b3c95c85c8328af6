#include "tools/report/analyses/quantile_sketch.h"

#include <algorithm>
#include <cmath>

#include "tools/report/analyses/stats.h"

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
  if (exact()) {
    values_.push_back(value);
    return;
  }
  if (count_ == kExactLimit + 1) moveValuesToBuckets();
  addToBuckets(value);
}

void QuantileSketch::merge(const QuantileSketch& other) {
  if (&other == this) {  // inserting a vector into itself is undefined
    const QuantileSketch copy = other;
    merge(copy);
    return;
  }
  const bool wasExact = exact();
  count_ += other.count_;
  ignored_ += other.ignored_;
  if (exact()) {
    values_.insert(values_.end(), other.values_.begin(), other.values_.end());
    return;
  }
  if (wasExact) moveValuesToBuckets();
  // An exact other has only values_, a bucketed one only zeros_ and buckets_.
  for (double value : other.values_) addToBuckets(value);
  zeros_ += other.zeros_;
  for (const auto& [index, n] : other.buckets_) buckets_[index] += n;
}

double QuantileSketch::quantile(double p) const {
  p = std::clamp(p, 0.0, 1.0);
  if (exact()) {
    std::vector<double> values = values_;
    return percentile(values, p);
  }
  // The same rank as percentile() picks, so the two modes answer the same question.
  const uint64_t rank = static_cast<uint64_t>(std::ceil(p * static_cast<double>(count_)));
  const uint64_t k = rank == 0 ? 0 : rank - 1;
  if (k < zeros_) return 0;
  auto bucket = buckets_.begin();
  for (uint64_t seen = zeros_ + bucket->second; seen <= k; seen += bucket->second) ++bucket;
  return bucketValue(bucket->first);
}

void QuantileSketch::moveValuesToBuckets() {
  for (double value : values_) addToBuckets(value);
  values_ = {};  // frees the memory; clear() would keep it
}

void QuantileSketch::addToBuckets(double value) {
  if (value == 0) {
    ++zeros_;
    return;
  }
  ++buckets_[bucketOf(value)];
}

}  // namespace commtrace::report
