// Which pairs of ranks a collective's bytes cross, modelled from its func and algorithm:
// the one decomposition the communication matrix and the link analysis both use. NCCL does
// not record its ring or tree order, so comm-rank order is assumed.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace commtrace::report {

struct ModelEdge {
  int src = 0;  // comm ranks
  int dst = 0;
  uint64_t bytes = 0;
};

// Appends to out the edges of one collective of n members whose per-rank payload is bytes.
// RING (and every algorithm not modelled on its own, see kEdgeModel): nccl-tests' wire model,
// rank i sends to i+1: AllReduce 2(n-1)/n x payload, AllGather/ReduceScatter (n-1) x payload
// (= (n-1)/n x S), Broadcast a chain from the root, Reduce a chain ending at the root.
// TREE AllReduce: a binary tree in comm-rank heap order (parent of i is (i-1)/2), the payload
// reduced up each edge and broadcast back down.
void modelEdges(std::string_view func, std::string_view algo, int n, int root, uint64_t bytes,
                std::vector<ModelEdge>& out);

// The decomposition in words, for the report.
extern const char kEdgeModel[];

}  // namespace commtrace::report
