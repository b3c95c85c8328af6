// Last arrivals per seat of one communicator in stretches of its instances: a rank slow for a
// tenth of a long run is a straggler there, though its count of last arrivals over the whole
// run is near chance (a planted straggler of 12 steps in 40 read z = 3.8 over the run and
// z > 8 over its stretch). At most kBuckets buckets of instances per seat, whose width doubles
// (neighbours merged) as the run goes on: memory that does not grow with the run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace commtrace::report {

// A stretch is judged as the whole run is (stragglers.h), with a stricter z: the best of some
// hundreds of stretches is taken, and chance alone reaches z = 4 in one of them far more often
// than in one whole run.
constexpr double kMinStretchZ = 6.0;
// A stretch must hold enough instances for its z to mean anything: chance expects the seat
// last at this many of them at least.
constexpr double kMinStretchExpectedLast = 4.0;

class ArrivalWindows {
 public:
  static constexpr size_t kBuckets = 32;

  // One seat's share of one instance: as ArrivalTally::Seat counts it.
  struct Cell {
    double last = 0, expected_last = 0, var_last = 0, wait_caused_ns = 0;
    void add(const Cell& other);
    template <class Archive>
    void serialize(Archive& ar) {
      ar(last, expected_last, var_last, wait_caused_ns);
    }
  };
  // The seat's cell for the instance being counted; next() after each instance.
  void add(size_t seat, const Cell& cell);
  void next();
  // Another tally of the same communicator (a shard holds all of a communicator's instances:
  // the other is empty or this one is).
  void merge(const ArrivalWindows& other);

  // The seat's stretch with the highest z, with its waits and the median seat's wait there.
  struct Stretch {
    double z = 0;
    double wait_caused_ns = 0;
    double median_wait_caused_ns = 0;
    uint64_t first_instance = 0, end_instance = 0;  // [first, end) in the communicator's order
  };
  Stretch best(size_t seat) const;
  // The same for several seats of one communicator: a stretch's median wait is found once
  // however many seats' best it is (found per seat, a 16,384-seat world communicator took
  // seats^2 sums: 4.5 s of a 16,384-rank report).
  std::vector<Stretch> best(const std::vector<size_t>& seats) const;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(width_, instances_, buckets_);
  }

 private:
  void widen();
  Cell at(size_t bucket, size_t seat) const;  // zero where the seat has none
  size_t seats() const;
  struct Buckets {  // a seat's stretch as buckets [first, end), its z and waits
    double z = 0, wait_caused_ns = 0;
    size_t first = 0, end = 0;  // end 0: none passed the thresholds
  };
  Buckets bestBuckets(size_t seat) const;
  double medianWaitCaused(size_t first_bucket, size_t end_bucket) const;

  uint64_t width_ = 1;      // instances per bucket
  uint64_t instances_ = 0;  // counted so far
  // [bucket][seat]: an instance's members fill one bucket's seats side by side.
  std::vector<std::vector<Cell>> buckets_;
};

}  // namespace commtrace::report
