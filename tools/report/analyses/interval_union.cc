#include "tools/report/analyses/interval_union.h"

#include <algorithm>

namespace commtrace::report {
namespace {

bool startsLater(const GpuInterval& a, const GpuInterval& b) { return a.start_ns > b.start_ns; }

}  // namespace

IntervalUnion::IntervalUnion(Observer on_closed) : on_closed_(std::move(on_closed)), start_order_(startsLater) {}

void IntervalUnion::add(const GpuInterval& interval) {
  if (interval.end_ns <= interval.start_ns || ended()) return;
  start_order_.push(interval);
  if (start_order_.size() > kReorder) merge(start_order_.popEarliest());
}

void IntervalUnion::endOfInput() {
  if (ended()) return;
  while (!start_order_.empty()) merge(start_order_.popEarliest());
  if (have_open_) close();
  final_before_ = UINT64_MAX;
}

void IntervalUnion::merge(GpuInterval interval) {
  if (first_start_ == 0) first_start_ = interval.start_ns;
  last_end_ = std::max(last_end_, interval.end_ns);
  final_before_ = std::max(final_before_, interval.start_ns);
  if (have_open_ && interval.start_ns < open_.start_ns) {
    ++out_of_order_;
    if (interval.end_ns <= open_.start_ns) return;
    interval.start_ns = open_.start_ns;
  }
  if (have_open_ && interval.start_ns <= open_.end_ns) {
    open_.end_ns = std::max(open_.end_ns, interval.end_ns);
    return;
  }
  if (have_open_) close();
  open_ = GpuInterval{interval.start_ns, interval.end_ns, 0, 0};
  have_open_ = true;
}

void IntervalUnion::close() {
  closed_.push_back(open_);
  have_open_ = false;
  if (on_closed_) on_closed_(open_);
}

std::span<const GpuInterval> IntervalUnion::closedFrom(uint64_t index) const {
  const size_t at = static_cast<size_t>(index - dropped_);
  return {closed_.data() + at, closed_.size() - at};
}

void IntervalUnion::within(uint64_t from, uint64_t to, std::vector<GpuInterval>& out) const {
  out.clear();
  const std::span<const GpuInterval> held = closed();
  auto it = std::partition_point(held.begin(), held.end(), [&](const GpuInterval& i) { return i.end_ns <= from; });
  for (; it != held.end() && it->start_ns < to; ++it) out.push_back(*it);
  if (have_open_ && open_.start_ns < to && open_.end_ns > from) out.push_back(open_);
}

void IntervalUnion::dropEndingBy(uint64_t t) {
  while (begin_ < closed_.size() && closed_[begin_].end_ns <= t) ++begin_;
  // Compacted once most of the vector is dropped: amortised constant per interval.
  if (begin_ > 1024 && begin_ * 2 > closed_.size()) {
    closed_.erase(closed_.begin(), closed_.begin() + static_cast<std::ptrdiff_t>(begin_));
    dropped_ += begin_;
    begin_ = 0;
  }
}

}  // namespace commtrace::report
