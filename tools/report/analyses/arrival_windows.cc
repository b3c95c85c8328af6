#include "tools/report/analyses/arrival_windows.h"

#include <algorithm>
#include <cmath>

#include "tools/report/load/stats.h"

namespace commtrace::report {

void ArrivalWindows::Cell::add(const Cell& other) {
  last += other.last;
  expected_last += other.expected_last;
  var_last += other.var_last;
  wait_caused_ns += other.wait_caused_ns;
}

void ArrivalWindows::add(size_t seat, const Cell& cell) {
  if (instances_ / width_ >= kBuckets) widen();
  if (seats_.size() <= seat) seats_.resize(seat + 1);
  std::vector<Cell>& buckets = seats_[seat];
  const size_t bucket = instances_ / width_;
  if (buckets.size() <= bucket) buckets.resize(bucket + 1);
  buckets[bucket].add(cell);
}

void ArrivalWindows::next() { ++instances_; }

void ArrivalWindows::widen() {
  for (std::vector<Cell>& buckets : seats_) {
    for (size_t b = 0; 2 * b < buckets.size(); ++b) {
      Cell merged = buckets[2 * b];
      if (2 * b + 1 < buckets.size()) merged.add(buckets[2 * b + 1]);
      buckets[b] = merged;
    }
    buckets.resize((buckets.size() + 1) / 2);
  }
  width_ *= 2;
}

void ArrivalWindows::merge(const ArrivalWindows& other) {
  if (other.instances_ == 0) return;
  if (instances_ == 0) {
    *this = other;
    return;
  }
  // Both counted instances of one communicator (shards split by communicator, so not
  // expected): overlaid bucket by bucket at the wider width, as instances at the same time.
  ArrivalWindows wide = other;
  while (wide.width_ < width_) wide.widen();
  while (width_ < wide.width_) widen();
  if (seats_.size() < wide.seats_.size()) seats_.resize(wide.seats_.size());
  for (size_t seat = 0; seat < wide.seats_.size(); ++seat) {
    std::vector<Cell>& buckets = seats_[seat];
    if (buckets.size() < wide.seats_[seat].size()) buckets.resize(wide.seats_[seat].size());
    for (size_t b = 0; b < wide.seats_[seat].size(); ++b) buckets[b].add(wide.seats_[seat][b]);
  }
  instances_ = std::max(instances_, wide.instances_);
}

ArrivalWindows::Stretch ArrivalWindows::best(size_t seat) const {
  Stretch out;
  if (seat >= seats_.size()) return out;
  const std::vector<Cell>& buckets = seats_[seat];
  size_t best_first = 0, best_end = 0;
  for (size_t first = 0; first < buckets.size(); ++first) {
    Cell sum;
    for (size_t end = first + 1; end <= buckets.size(); ++end) {
      sum.add(buckets[end - 1]);
      if (sum.expected_last < kMinStretchExpectedLast || sum.var_last <= 0) continue;
      const double z = (sum.last - sum.expected_last) / std::sqrt(sum.var_last);
      if (z > out.z) out.z = z, out.wait_caused_ns = sum.wait_caused_ns, best_first = first, best_end = end;
    }
  }
  if (best_end == 0) return out;
  std::vector<double> waits;
  for (const std::vector<Cell>& other : seats_) {
    double wait = 0;
    for (size_t b = best_first; b < best_end && b < other.size(); ++b) wait += other[b].wait_caused_ns;
    waits.push_back(wait);
  }
  out.median_wait_caused_ns = median(std::move(waits));
  out.first_instance = best_first * width_;
  out.end_instance = std::min<uint64_t>(best_end * width_, instances_);
  return out;
}

}  // namespace commtrace::report
