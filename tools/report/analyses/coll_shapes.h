// Collective instances summed by shape, as the communication matrix and the slow-link
// analysis need them: the edges an instance is modelled to cross (edge_model.h) depend
// only on its communicator, func, algorithm, size and root, and what each analysis takes
// from its members is its transfer time (op_metrics.h). So a run of a million AllReduces
// of one bucket size is a handful of shapes, each modelled once at the end.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "tools/report/load/archived_name.h"
#include "tools/report/load/op_joiner.h"
#include "tools/report/load/run_model.h"

namespace commtrace::report {

class CollShapeTally : public JoinedOpSink {
 public:
  struct Shape {
    uint32_t comm = 0;
    NameId func = 0;
    NameId algo = 0;
    int32_t root = -1;
    uint32_t n = 0;      // members
    uint64_t bytes = 0;  // per-rank payload; 0: not recorded
    auto operator<=>(const Shape&) const = default;
    template <class Archive>
    void serialize(Archive& ar) {
      ar(comm, archived(func), archived(algo), root, n, bytes);
    }
  };
  struct Sums {
    uint64_t ops = 0;
    uint64_t timed = 0;        // ops with a transfer time
    uint64_t total_ns = 0;     // of their transfer times
    uint64_t shortest_ns = 0;  // the fastest of them (0: none timed)
    void merge(const Sums& other);
    template <class Archive>
    void serialize(Archive& ar) {
      ar(ops, timed, total_ns, shortest_ns);
    }
  };

  void collective(const CollInstance& instance, std::span<const MemberView> members) override;
  void transfer(const P2pTransfer&) override {}
  // Adds another tally of the same run (finished, or both not yet): a shard's.
  void merge(const CollShapeTally& other);

  const std::map<Shape, Sums>& shapes() const { return shapes_; }
  // Collective instances per communicator, for `comms` communicators.
  std::vector<uint64_t> instancesPerComm(size_t comms) const;
  // A shard's state (tools/report/shard/).
  template <class Archive>
  void serialize(Archive& ar) {
    ar(shapes_);
  }

 private:
  std::map<Shape, Sums> shapes_;
};

// The collectives of a run held whole, summed by shape.
CollShapeTally collShapes(const RunModel& run);

}  // namespace commtrace::report
