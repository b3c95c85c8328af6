#include "tools/report/analyses/arrival_windows.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

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
  const size_t bucket = instances_ / width_;
  if (buckets_.size() <= bucket) buckets_.resize(bucket + 1);
  std::vector<Cell>& seats = buckets_[bucket];
  if (seats.size() <= seat) seats.resize(seat + 1);
  seats[seat].add(cell);
}

void ArrivalWindows::next() { ++instances_; }

ArrivalWindows::Cell ArrivalWindows::at(size_t bucket, size_t seat) const {
  return bucket < buckets_.size() && seat < buckets_[bucket].size() ? buckets_[bucket][seat] : Cell{};
}

size_t ArrivalWindows::seats() const {
  size_t n = 0;
  for (const std::vector<Cell>& seats : buckets_) n = std::max(n, seats.size());
  return n;
}

// Neighbouring buckets merged: each seat's cells added.
void ArrivalWindows::widen() {
  std::vector<std::vector<Cell>> wide((buckets_.size() + 1) / 2);
  for (size_t b = 0; b < buckets_.size(); ++b) {
    std::vector<Cell>& into = wide[b / 2];
    if (into.size() < buckets_[b].size()) into.resize(buckets_[b].size());
    for (size_t seat = 0; seat < buckets_[b].size(); ++seat) into[seat].add(buckets_[b][seat]);
  }
  buckets_ = std::move(wide);
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
  if (buckets_.size() < wide.buckets_.size()) buckets_.resize(wide.buckets_.size());
  for (size_t b = 0; b < wide.buckets_.size(); ++b) {
    std::vector<Cell>& seats = buckets_[b];
    if (seats.size() < wide.buckets_[b].size()) seats.resize(wide.buckets_[b].size());
    for (size_t seat = 0; seat < wide.buckets_[b].size(); ++seat) seats[seat].add(wide.buckets_[b][seat]);
  }
  instances_ = std::max(instances_, wide.instances_);
}

ArrivalWindows::Stretch ArrivalWindows::best(size_t seat) const { return best(std::vector<size_t>{seat}).front(); }

std::vector<ArrivalWindows::Stretch> ArrivalWindows::best(const std::vector<size_t>& seats) const {
  std::vector<Stretch> out;
  out.reserve(seats.size());
  std::map<std::pair<size_t, size_t>, double> medians;  // [first, end) buckets -> the median seat's wait
  for (size_t seat : seats) {
    const Buckets b = bestBuckets(seat);
    Stretch& s = out.emplace_back(Stretch{.z = b.z, .wait_caused_ns = b.wait_caused_ns});
    if (b.end == 0) continue;
    const auto [it, fresh] = medians.try_emplace({b.first, b.end}, 0.0);
    if (fresh) it->second = medianWaitCaused(b.first, b.end);
    s.median_wait_caused_ns = it->second;
    s.first_instance = b.first * width_;
    s.end_instance = std::min<uint64_t>(b.end * width_, instances_);
  }
  return out;
}

ArrivalWindows::Buckets ArrivalWindows::bestBuckets(size_t seat) const {
  Buckets out;
  if (seat >= seats()) return out;
  for (size_t first = 0; first < buckets_.size(); ++first) {
    Cell sum;
    for (size_t end = first + 1; end <= buckets_.size(); ++end) {
      sum.add(at(end - 1, seat));
      if (sum.expected_last < kMinStretchExpectedLast || sum.var_last <= 0) continue;
      const double z = (sum.last - sum.expected_last) / std::sqrt(sum.var_last);
      if (z > out.z) out = {.z = z, .wait_caused_ns = sum.wait_caused_ns, .first = first, .end = end};
    }
  }
  return out;
}

double ArrivalWindows::medianWaitCaused(size_t first_bucket, size_t end_bucket) const {
  std::vector<double> waits;
  const size_t n_seats = seats();
  waits.reserve(n_seats);
  for (size_t seat = 0; seat < n_seats; ++seat) {
    double wait = 0;
    for (size_t b = first_bucket; b < end_bucket; ++b) wait += at(b, seat).wait_caused_ns;
    waits.push_back(wait);
  }
  return median(std::move(waits));
}

}  // namespace commtrace::report
