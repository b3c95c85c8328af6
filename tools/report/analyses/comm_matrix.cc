#include "tools/report/analyses/comm_matrix.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <unordered_map>

#include "tools/report/analyses/coll_shapes.h"
#include "tools/report/analyses/edge_model.h"
#include "tools/report/analyses/op_metrics.h"
#include "tools/report/analyses/p2p_calls.h"
#include "tools/report/analyses/rank_index.h"

namespace commtrace::report {
namespace {

struct CellSum {
  uint64_t bytes = 0;
  uint64_t p2p_bytes = 0;
  uint64_t timed_bytes = 0;  // bytes of the ops that had a transfer time
  uint64_t time_ns = 0;
};

// One slice's sums over its ranks (global ranks, or one communicator's comm ranks);
// global[i] is the global rank of index i. Sparse: a ring or tree touches a few cells per
// rank, and at 1,024 ranks a dense whole-run grid per func took 32 MiB each.
class Grid {
 public:
  explicit Grid(std::vector<int> global) : ranks_(static_cast<int>(global.size())), global_(std::move(global)) {}
  void add(int src, int dst, const CellSum& sum) {
    CellSum& c = cells_[static_cast<uint64_t>(src) * static_cast<uint64_t>(ranks_) + static_cast<uint64_t>(dst)];
    c.bytes += sum.bytes;
    c.p2p_bytes += sum.p2p_bytes;
    c.timed_bytes += sum.timed_bytes;
    c.time_ns += sum.time_ns;
  }
  int ranks() const { return ranks_; }
  int global(int i) const { return global_[i]; }
  // each(src, dst, sum) for every cell that was added to, by source then destination.
  template <class Each>
  void forEachCell(Each&& each) const {
    std::vector<uint64_t> keys;
    keys.reserve(cells_.size());
    for (const auto& [key, sum] : cells_) keys.push_back(key);
    std::sort(keys.begin(), keys.end());
    const auto n = static_cast<uint64_t>(ranks_);
    for (uint64_t key : keys) each(static_cast<int>(key / n), static_cast<int>(key % n), cells_.at(key));
  }

 private:
  int ranks_;
  std::vector<int> global_;
  std::unordered_map<uint64_t, CellSum> cells_;  // src * ranks + dst
};

MatrixCell cellOf(int src, int dst, const CellSum& sum) {
  MatrixCell cell;
  cell.src = src;
  cell.dst = dst;
  cell.bytes = sum.bytes;
  cell.p2p_bytes = sum.p2p_bytes;
  cell.time_us = static_cast<double>(sum.time_ns) / 1e3;
  cell.gbs = gbPerS(static_cast<double>(sum.timed_bytes), sum.time_ns);
  cell.measured = sum.p2p_bytes == sum.bytes;
  return cell;
}

MatrixSlice sliceOf(const Grid& grid, std::string label, uint64_t comm, std::string func) {
  MatrixSlice slice{std::move(label), comm, std::move(func), {}};
  grid.forEachCell([&](int s, int d, const CellSum& sum) {
    if (sum.bytes != 0) slice.cells.push_back(cellOf(grid.global(s), grid.global(d), sum));
  });
  return slice;
}

std::string commLabel(const RunModel& run, const Communicator& comm) {
  char id[24];
  std::snprintf(id, sizeof id, "0x%016llx", static_cast<unsigned long long>(comm.id));
  const std::string_view name = run.name(comm.name);
  return "comm " + (name.empty() ? std::string() : std::string(name) + " ") + "(" + id + ")";
}

std::vector<int> worldRanks(const RunModel& run) {
  std::vector<int> global(rankSlots(run));
  for (size_t r = 0; r < global.size(); ++r) global[r] = static_cast<int>(r);
  return global;
}

// Sums every op into the whole-run grid and its communicator's and func's grids.
class MatrixBuilder {
 public:
  explicit MatrixBuilder(const RunModel& run)
      : run_(run), world_(worldRanks(run)), ranks_(static_cast<int>(world_.size())), all_(world_) {}

  // Each shape's edges modelled once, carrying all its ops.
  void addCollectives(const CollShapeTally& shapes) {
    std::vector<ModelEdge> edges;
    for (const auto& [shape, sums] : shapes.shapes()) {
      if (shape.bytes == 0) {
        unsized_ops_ += sums.ops;
        continue;
      }
      edges.clear();
      modelEdges(run_.name(shape.func), run_.name(shape.algo), static_cast<int>(shape.n), shape.root, shape.bytes, edges);
      for (const ModelEdge& e : edges)
        add(shape.comm, shape.func, e.src, e.dst, {e.bytes * sums.ops, 0, e.bytes * sums.timed, sums.total_ns});
    }
  }

  // Each transfer cell (a call's pieces with their call's transfer time).
  void addTransfers(const TransferCellTally& cells) {
    for (const auto& [cell, sums] : cells.cells()) {
      unsized_ops_ += sums.unsized;
      if (sums.bytes != 0) add(cell.comm, cell.func, cell.src, cell.dst, {sums.bytes, sums.bytes, sums.timed_bytes, sums.time_ns});
    }
  }

  CommMatrix finish() {
    CommMatrix m;
    m.ranks = ranks_;
    m.dense = ranks_ <= CommMatrix::kMaxDenseRanks;
    if (m.dense) fillDense(m);
    m.slices.push_back(sliceOf(all_, "all", 0, ""));
    for (const auto& [comm, grid] : per_comm_)
      m.slices.push_back(sliceOf(grid, commLabel(run_, run_.comms[comm]), run_.comms[comm].id, ""));
    for (const auto& [func, grid] : per_func_) {
      const std::string name(run_.name(func));
      m.slices.push_back(sliceOf(grid, name, 0, name));
    }
    m.model = std::string(kEdgeModel) + "; point-to-point cells are measured" + leftOut();
    return m;
  }

 private:
  void fillDense(CommMatrix& m) const {
    m.bytes.assign(ranks_, std::vector<uint64_t>(ranks_, 0));
    m.p2p_bytes = m.bytes;
    m.time_us.assign(ranks_, std::vector<double>(ranks_, 0.0));
    all_.forEachCell([&](int s, int d, const CellSum& sum) {
      m.bytes[s][d] = sum.bytes;
      m.p2p_bytes[s][d] = sum.p2p_bytes;
      m.time_us[s][d] = static_cast<double>(sum.time_ns) / 1e3;
    });
  }

  void add(uint32_t comm, NameId func, int src_comm_rank, int dst_comm_rank, const CellSum& sum) {
    const int src = globalRank(comm, src_comm_rank), dst = globalRank(comm, dst_comm_rank);
    if (src < 0 || dst < 0) {
      unattributed_bytes_ += sum.bytes;
      return;
    }
    all_.add(src, dst, sum);
    gridOf(per_comm_, comm, [&] { return run_.comms[comm].global_ranks; }).add(src_comm_rank, dst_comm_rank, sum);
    gridOf(per_func_, func, [&] { return world_; }).add(src, dst, sum);
  }

  // The slice's grid, made on first use with the global ranks ranks() names.
  template <class Key, class Ranks>
  static Grid& gridOf(std::map<Key, Grid>& grids, Key key, Ranks ranks) {
    auto it = grids.find(key);
    if (it == grids.end()) it = grids.emplace(key, Grid(ranks())).first;
    return it->second;
  }

  int globalRank(uint32_t comm, int comm_rank) const {
    const Communicator& c = run_.comms[comm];
    return comm_rank < c.size ? globalRankOf(c, comm_rank) : -1;
  }

  std::string leftOut() const {
    std::string out;
    if (unsized_ops_ != 0) out += "; " + std::to_string(unsized_ops_) + " ops of unrecorded size left out";
    if (unattributed_bytes_ != 0)
      out += "; " + std::to_string(unattributed_bytes_) + " bytes between ranks of unknown global rank left out";
    return out;
  }

  const RunModel& run_;
  std::vector<int> world_;
  int ranks_;
  Grid all_;
  std::map<uint32_t, Grid> per_comm_;
  std::map<NameId, Grid> per_func_;
  uint64_t unsized_ops_ = 0;
  uint64_t unattributed_bytes_ = 0;
};

}  // namespace

CommMatrix communicationMatrix(const RunModel& run) {
  return communicationMatrix(run, collShapes(run), transferCells(run));
}

CommMatrix communicationMatrix(const RunModel& run, const CollShapeTally& shapes, const TransferCellTally& transfers) {
  MatrixBuilder builder(run);
  builder.addCollectives(shapes);
  builder.addTransfers(transfers);
  return builder.finish();
}

}  // namespace commtrace::report
