#include "tools/report/analyses/transfer_cells.h"

#include <algorithm>

#include "tools/report/analyses/op_metrics.h"
#include "tools/report/load/op_stream.h"

namespace commtrace::report {

void TransferCellTally::Sums::merge(const Sums& other) {
  unsized += other.unsized;
  bytes += other.bytes;
  timed_bytes += other.timed_bytes;
  time_ns += other.time_ns;
  link_ops += other.link_ops;
  best_gbs = std::max(best_gbs, other.best_gbs);
}

namespace {

void addBytes(TransferCellTally::Sums& sums, uint64_t bytes, uint64_t ns) {
  if (bytes == 0) {
    ++sums.unsized;
    return;
  }
  sums.bytes += bytes;
  if (ns == 0) return;
  sums.timed_bytes += bytes;
  sums.time_ns += ns;
}

}  // namespace

void TransferCellTally::transfer(const P2pTransfer& t) {
  Sums& sums = cells_[{t.comm, t.func, t.send.comm_rank, t.recv.comm_rank}];
  const uint64_t ns = transferNs(t);
  // A call's piece (not one to itself) is summed with its call's time in call().
  if (!NamePool::isCallPiece(t.func) || t.send.comm_rank == t.recv.comm_rank) addBytes(sums, t.bytes, ns);
  if (ns == 0 || t.bytes < kMinLinkBytes) return;
  ++sums.link_ops;
  sums.best_gbs = std::max(sums.best_gbs, gbPerS(static_cast<double>(t.bytes), ns));
}

void TransferCellTally::call(const P2pCall& c) {
  const uint64_t ns = transferNs(c);
  for (const P2pCall::Piece& p : c.pieces) addBytes(cells_[{c.comm, c.func, p.src, p.dst}], p.bytes, ns);
}


void TransferCellTally::merge(const TransferCellTally& other) {
  for (const auto& [cell, sums] : other.cells_) cells_[cell].merge(sums);
}

TransferCellTally transferCells(const RunModel& run) {
  TransferCellTally cells;
  P2pCallJoiner calls([&](const P2pCall& c) { cells.call(c); });
  OpFanout both({&calls, &cells});  // the calls first: their finish() hands on the last ones
  replayRun(run, both);
  return cells;
}

}  // namespace commtrace::report
