#include "tools/report/analyses/coll_shapes.h"

#include <algorithm>

#include "tools/report/analyses/op_metrics.h"
#include "tools/report/load/op_stream.h"

namespace commtrace::report {

void CollShapeTally::Sums::merge(const Sums& other) {
  ops += other.ops;
  timed += other.timed;
  total_ns += other.total_ns;
  if (other.shortest_ns != 0 && (shortest_ns == 0 || other.shortest_ns < shortest_ns)) shortest_ns = other.shortest_ns;
}

void CollShapeTally::collective(const CollInstance& c, std::span<const MemberView> members) {
  const uint64_t ns = transferNs(members);
  Sums one{.ops = 1, .timed = ns != 0, .total_ns = ns, .shortest_ns = ns};
  shapes_[{c.comm, c.func, c.algo, c.root, c.n_members, c.bytes}].merge(one);
}


void CollShapeTally::merge(const CollShapeTally& other) {
  for (const auto& [shape, sums] : other.shapes_) shapes_[shape].merge(sums);
}

std::vector<uint64_t> CollShapeTally::instancesPerComm(size_t comms) const {
  std::vector<uint64_t> instances(comms, 0);
  for (const auto& [shape, sums] : shapes_)
    if (shape.comm < comms) instances[shape.comm] += sums.ops;
  return instances;
}

CollShapeTally collShapes(const RunModel& run) {
  CollShapeTally tally;
  replayRun(run, tally);
  return tally;
}

}  // namespace commtrace::report
