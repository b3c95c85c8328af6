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
  if (bucketed_) {
    addToBuckets(value, 1);
    return;
  }
  buffered_.emplace_back(value, 1);
  if (buffered_.size() >= std::clamp(values_.size() / 8, kFewestBuffered, kBuffered)) mergeBuffered();
}

// Merged in place from the back (values_ grows by the buffer), then equal values combined.
void QuantileSketch::mergeBuffered() {
  if (buffered_.empty()) return;
  std::sort(buffered_.begin(), buffered_.end());
  const size_t held = values_.size();
  // Grown to fit, not doubled: a report holds thousands of sketches of a few thousand values.
  const size_t needed = held + buffered_.size();
  values_.reserve(needed);
  values_.resize(needed);
  auto out = values_.end(), a = values_.begin() + static_cast<std::ptrdiff_t>(held);
  for (auto b = buffered_.end(); b != buffered_.begin();) *--out = (a != values_.begin() && (a - 1)->first > (b - 1)->first) ? *--a : *--b;
  size_t kept = 0;
  for (size_t i = 0; i < values_.size(); ++i) {
    if (kept != 0 && values_[kept - 1].first == values_[i].first) values_[kept - 1].second += values_[i].second;
    else values_[kept++] = values_[i];
  }
  values_.resize(kept);
  buffered_.clear();
  if (values_.size() > kExactLimit) moveValuesToBuckets();
}

template <class Read>
auto QuantileSketch::read(Read reader) const {
  if (buffered_.empty()) return reader(*this);
  QuantileSketch merged = *this;
  merged.mergeBuffered();
  return reader(merged);
}

bool QuantileSketch::exact() const {
  return read([](const QuantileSketch& s) { return !s.bucketed_; });
}

size_t QuantileSketch::buckets() const {
  return read([](const QuantileSketch& s) { return s.buckets_.size(); });
}

void QuantileSketch::merge(const QuantileSketch& other) {
  if (&other == this) {  // inserting a vector into itself is undefined
    const QuantileSketch copy = other;
    merge(copy);
    return;
  }
  count_ += other.count_;
  ignored_ += other.ignored_;
  mergeBuffered();
  if (other.bucketed_ && !bucketed_) moveValuesToBuckets();
  // An exact other has only values_ and buffered_, a bucketed one only zeros_ and buckets_.
  for (const auto& values : {&other.values_, &other.buffered_}) {
    if (bucketed_) {
      for (const auto& [value, n] : *values) addToBuckets(value, n);
    } else {
      buffered_.insert(buffered_.end(), values->begin(), values->end());
      mergeBuffered();
    }
  }
  zeros_ += other.zeros_;
  for (const auto& [index, n] : other.buckets_) buckets_[index] += n;
}

double QuantileSketch::quantile(double p) const {
  if (!buffered_.empty()) return read([p](const QuantileSketch& s) { return s.quantile(p); });
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
  buffered_ = {};
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
