// The communication matrix: collectives decomposed by edge_model (ring, chains, tree) onto
// global ranks, point-to-point cells measured, cell times summed, slices per communicator
// and per func.
#include "tools/report/analyses/comm_matrix.h"

#include <gtest/gtest.h>

#include <map>

#include "tests/support/run_model_builder.h"
#include "tools/report/analyses/edge_model.h"

using namespace commtrace::report;
using commtrace::testutil::RunModelBuilder;
using commtrace::testutil::Span;

namespace {

using Edges = std::map<std::pair<int, int>, uint64_t>;

Edges edgesOf(std::string_view func, std::string_view algo, int n, int root, uint64_t bytes) {
  std::vector<ModelEdge> out;
  modelEdges(func, algo, n, root, bytes, out);
  Edges edges;
  for (const ModelEdge& e : out) edges[{e.src, e.dst}] += e.bytes;
  EXPECT_EQ(edges.size(), out.size()) << "no pair twice";
  return edges;
}

TEST(EdgeModel, RingFollowsNcclTests) {
  EXPECT_EQ(edgesOf("AllReduce", "RING", 4, 0, 1000), (Edges{{{0, 1}, 1500}, {{1, 2}, 1500}, {{2, 3}, 1500}, {{3, 0}, 1500}}));
  EXPECT_EQ(edgesOf("AllGather", "RING", 4, 0, 1000), (Edges{{{0, 1}, 3000}, {{1, 2}, 3000}, {{2, 3}, 3000}, {{3, 0}, 3000}}));
  EXPECT_EQ(edgesOf("ReduceScatter", "RING", 3, 0, 10), (Edges{{{0, 1}, 20}, {{1, 2}, 20}, {{2, 0}, 20}}));
  EXPECT_EQ(edgesOf("Broadcast", "RING", 4, 1, 7), (Edges{{{1, 2}, 7}, {{2, 3}, 7}, {{3, 0}, 7}}));
  EXPECT_EQ(edgesOf("Reduce", "RING", 4, 1, 7), (Edges{{{2, 3}, 7}, {{3, 0}, 7}, {{0, 1}, 7}}));
}

TEST(EdgeModel, TreeAllReduceGoesUpAndDownABinaryTree) {
  EXPECT_EQ(edgesOf("AllReduce", "TREE", 4, 0, 8),
            (Edges{{{1, 0}, 8}, {{0, 1}, 8}, {{2, 0}, 8}, {{0, 2}, 8}, {{3, 1}, 8}, {{1, 3}, 8}}));
}

TEST(EdgeModel, OtherAlgorithmsAreModelledAsRingAndNothingForOneRank) {
  EXPECT_EQ(edgesOf("AllReduce", "NVLS", 3, 0, 3), edgesOf("AllReduce", "RING", 3, 0, 3));
  EXPECT_EQ(edgesOf("AllGather", "PAT", 3, 0, 3), edgesOf("AllGather", "RING", 3, 0, 3));
  EXPECT_TRUE(edgesOf("AllReduce", "RING", 1, 0, 3).empty());
}

const MatrixCell* cellAt(const MatrixSlice& slice, int src, int dst) {
  for (const MatrixCell& c : slice.cells)
    if (c.src == src && c.dst == dst) return &c;
  return nullptr;
}

const MatrixSlice& sliceNamed(const CommMatrix& m, const std::string& label) {
  for (const MatrixSlice& s : m.slices)
    if (s.label == label) return s;
  ADD_FAILURE() << "no slice " << label;
  return m.slices.front();
}

TEST(CommMatrix, CollectivesLandOnGlobalRanksInCommRankOrder) {
  RunModelBuilder b({"a", "a", "a", "a", "a", "a", "a", "a"});
  const uint32_t comm = b.comm({2, 5, 7}, "dp");
  b.coll(comm, "AllReduce", 300, {{100, 1100}, {600, 1100}, {900, 1100}});  // transfer 200 ns
  b.coll(comm, "AllReduce", 300, {{100, 1400}, {600, 1400}, {900, 1400}});  // 500 ns
  const CommMatrix m = communicationMatrix(b.run);
  ASSERT_EQ(m.ranks, 8);
  EXPECT_EQ(m.bytes[2][5], 800u);  // 2(n-1)/n x 300 per op
  EXPECT_EQ(m.bytes[5][7], 800u);
  EXPECT_EQ(m.bytes[7][2], 800u);
  EXPECT_EQ(m.bytes[5][2], 0u);
  EXPECT_EQ(m.p2p_bytes[2][5], 0u);
  EXPECT_DOUBLE_EQ(m.time_us[2][5], 0.7);
  const MatrixCell* cell = cellAt(sliceNamed(m, "all"), 7, 2);
  ASSERT_NE(cell, nullptr);
  EXPECT_FALSE(cell->measured);
  EXPECT_DOUBLE_EQ(cell->gbs, 800.0 / 700);
  EXPECT_NE(m.model.find("comm-rank order is assumed"), std::string::npos);
}

TEST(CommMatrix, PointToPointIsMeasuredAndMixedCellsSaySo) {
  RunModelBuilder b({"a", "a", "b"});
  const uint32_t world = b.comm({0, 1, 2}, "world");
  const uint32_t pair = b.comm({1, 2}, "pp");
  b.p2p(world, "Send", 0, 2, 1000, {100, 600}, {400, 600});  // transfer 200 ns
  b.p2p(world, "Send", 1, 2, 50, {100, 200}, {150, 200});
  b.coll(pair, "AllGather", 70, {{100, 200}, {100, 200}});   // 1 -> 2 and 2 -> 1, 70 each
  const CommMatrix m = communicationMatrix(b.run);
  EXPECT_EQ(m.p2p_bytes[0][2], 1000u);
  EXPECT_EQ(m.bytes[0][2], 1000u);
  EXPECT_DOUBLE_EQ(m.time_us[0][2], 0.2);
  const MatrixSlice& all = sliceNamed(m, "all");
  EXPECT_TRUE(cellAt(all, 0, 2)->measured);
  const MatrixCell* mixed = cellAt(all, 1, 2);
  ASSERT_NE(mixed, nullptr);
  EXPECT_EQ(mixed->bytes, 120u);
  EXPECT_EQ(mixed->p2p_bytes, 50u);
  EXPECT_FALSE(mixed->measured);
  EXPECT_EQ(cellAt(all, 2, 1)->bytes, 70u);

  // Slices: per communicator (cells on global ranks) and per func.
  const MatrixSlice& pp = sliceNamed(m, "comm pp (0x0000000000001001)");
  EXPECT_EQ(pp.comm, b.run.comms[pair].id);
  ASSERT_EQ(pp.cells.size(), 2u);
  EXPECT_EQ(cellAt(pp, 1, 2)->bytes, 70u);
  const MatrixSlice& send = sliceNamed(m, "Send");
  EXPECT_EQ(send.func, "Send");
  EXPECT_EQ(send.cells.size(), 2u);
  EXPECT_EQ(cellAt(sliceNamed(m, "AllGather"), 1, 2)->bytes, 70u);
}

// Each AlltoAll piece's own span includes waiting for the call's last rank; the pieces run
// together for the call's transfer time (the last arriver's span), and that is their time.
TEST(CommMatrix, AlltoAllPiecesTakeTheirCallsTransferTime) {
  RunModelBuilder b({"h", "h", "h"});
  const uint32_t w = b.comm({0, 1, 2}, "w");
  b.alltoall(w, 1000, {{100, 1100}, {300, 1100}, {900, 1100}});  // rank 2 arrives last: 200 ns
  const CommMatrix m = communicationMatrix(b.run);
  for (int src = 0; src < 3; ++src)
    for (int dst = 0; dst < 3; ++dst) {
      EXPECT_EQ(m.p2p_bytes[src][dst], src == dst ? 0u : 1000u);
      EXPECT_DOUBLE_EQ(m.time_us[src][dst], src == dst ? 0.0 : 0.2) << src << " -> " << dst;
    }
}

TEST(CommMatrix, RowSumsAddEveryOpOnce) {
  RunModelBuilder b({"a", "a", "a", "a"});
  const uint32_t comm = b.comm({0, 1, 2, 3}, "w");
  b.coll(comm, "Broadcast", 100, {{1, 9}, {1, 9}, {1, 9}, {1, 9}}, "RING", "LL", 2);
  b.coll(comm, "ReduceScatter", 10, {{1, 9}, {1, 9}, {1, 9}, {1, 9}});
  const CommMatrix m = communicationMatrix(b.run);
  std::vector<uint64_t> sent(4, 0);
  for (int s = 0; s < 4; ++s)
    for (int d = 0; d < 4; ++d) sent[s] += m.bytes[s][d];
  // Broadcast from 2: 2 -> 3 -> 0 -> 1; ReduceScatter: 30 on each ring edge.
  EXPECT_EQ(sent, (std::vector<uint64_t>{130, 30, 130, 130}));
}

TEST(CommMatrix, UnknownSizesAndRanksAreLeftOutAndSaid) {
  RunModelBuilder b({"a", "a"});
  const uint32_t comm = b.comm({0, 1}, "w");
  b.coll(comm, "AllReduce", 0, {{1, 9}, {1, 9}});
  const uint32_t anonymous = b.comm({0, 1}, "x");
  b.run.comms[anonymous].global_ranks = {-1, -1};
  b.run.comms[anonymous].processes = {-1, -1};
  b.coll(anonymous, "AllReduce", 64, {{0, 0, false}, {0, 0, false}});
  const CommMatrix m = communicationMatrix(b.run);
  EXPECT_EQ(m.bytes[0][1] + m.bytes[1][0], 0u);
  EXPECT_NE(m.model.find("1 ops of unrecorded size left out"), std::string::npos) << m.model;
  EXPECT_NE(m.model.find("128 bytes between ranks of unknown global rank"), std::string::npos) << m.model;
}

// One record claiming global rank 65535 made the report allocate three 65,536 x 65,536 grids
// (8 GB, then bad_alloc). Past kMaxDenseRanks the cells are the slices' alone.
TEST(CommMatrix, AFarGlobalRankCostsNoDenseGrid) {
  RunModelBuilder b({"a", "a"});
  b.run.processes[1].rank = 65535;
  const uint32_t comm = b.comm({0, 65535}, "w");
  b.run.comms[comm].processes = {0, 1};
  b.coll(comm, "AllReduce", 1000, {{0, 10}, {0, 10}});
  const CommMatrix m = communicationMatrix(b.run);
  EXPECT_EQ(m.ranks, 65536);
  EXPECT_FALSE(m.dense);
  EXPECT_TRUE(m.bytes.empty());
  const MatrixSlice& all = sliceNamed(m, "all");
  ASSERT_NE(cellAt(all, 0, 65535), nullptr);
  EXPECT_EQ(cellAt(all, 0, 65535)->bytes, 1000u);
  ASSERT_NE(cellAt(all, 65535, 0), nullptr);

  RunModelBuilder small({"a", "a"});
  small.coll(small.comm({0, 1}, "w"), "AllReduce", 1000, {{0, 10}, {0, 10}});
  const CommMatrix dense = communicationMatrix(small.run);
  EXPECT_TRUE(dense.dense);
  EXPECT_EQ(dense.bytes[0][1], 1000u);
}

}  // namespace
