// The calls behind the pieces of AlltoAll, Gather and Scatter. NCCL runs each such call as
// per-peer Send/Recv tasks, each under a P2pApi event of its own that keeps the call's func,
// so the records hold pieces (RunModel::transfers with that func) and nothing that names the
// call they came from. Not even the enter time: each piece's cpu_start_ns is its own
// P2pApi's (v5+; v4: its own task start), microseconds apart from its siblings'.
//
// The grouping rule. A rank's pieces of one func on one communicator, in the order of their
// cpu_start_ns (the order the rank issued them), belong to one call until that call's part
// on the rank is complete; a piece that cannot belong to the part so far begins the next call
// early. A rank's part of one call of a communicator of n ranks:
//   AlltoAll: a send to and a receive from each of the n-1 others;
//   Gather:   the root receives from each of the n-1 others; every other rank sends one piece;
//   Scatter:  the root sends to each of the n-1 others; every other rank receives one piece.
// A piece cannot belong when the part already has a piece of its direction and peer, or, for
// Gather and Scatter, when it goes the other way. Calls are numbered k = 0, 1, ... per (comm,
// func, rank), and the k-th call on every member is one instance: NCCL requires the members
// of a communicator to issue its calls in the same order. A piece to the rank itself (a local
// copy, if NCCL records one) is left out. Lost pieces (dropped records) can end a call early
// or late on that rank only; a rank without a file has no part. Pieces issued at the same
// instant are taken in (op index, peer, direction) order.
//
// Streamed (P2pCallJoiner): pieces arrive as their transfers are joined, close to issue
// order (the files are read in step); each rank's are put back in issue order in a window of
// kPieceHorizonNs of its own clock (at most kMaxHeldPieces), and a call is handed on once
// every rank that has pieces of its (communicator, func) is past it, or at the end. What is
// held is the calls still open and the pieces in the windows, not the run's pieces.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "tools/report/load/op_joiner.h"
#include "tools/report/load/run_model.h"

namespace commtrace::report {

struct P2pCall {
  uint32_t comm = 0;  // index into RunModel::comms
  NameId func = 0;
  uint64_t index = 0;  // k: this call's position among func's calls on comm
  uint64_t bytes = 0;  // per-peer payload: one piece's bytes (0 when the datatype was not known)
  // Each comm rank's part, in comm-rank order (size: the communicator's): cpu_start_ns from
  // its first piece, cpu_end_ns the latest piece's, the GPU span from the first piece start
  // to the last piece end (pieces without GPU times left out); process -1 where the rank
  // recorded no piece of this call.
  std::vector<MemberView> members;
  // The call's pieces, each once (assigned by the sender's grouping, or the receiver's where
  // the send was not recorded).
  struct Piece {
    int32_t src = 0, dst = 0;  // comm ranks
    uint64_t op_index = 0;     // the transfer's (P2pTransfer::op_index)
    uint64_t bytes = 0;
  };
  std::vector<Piece> pieces;
};

// Groups the pieces of AlltoAll, Gather and Scatter calls as their transfers stream by, and
// hands each call to on_call once complete (above); finish() hands on the rest.
class P2pCallJoiner : public JoinedOpSink {
 public:
  static constexpr uint64_t kPieceHorizonNs = 2'000'000'000;  // 10 flush periods at the default 200 ms
  static constexpr size_t kMaxHeldPieces = 65'536;            // per rank and (communicator, func)

  using OnCall = std::function<void(const P2pCall&)>;
  explicit P2pCallJoiner(OnCall on_call);
  ~P2pCallJoiner() override;
  P2pCallJoiner(const P2pCallJoiner&) = delete;
  P2pCallJoiner& operator=(const P2pCallJoiner&) = delete;

  void collective(const CollInstance&, std::span<const MemberView>) override {}
  void transfer(const P2pTransfer& transfer) override;
  void finish() override;

  struct Group;  // one (communicator, func)

 private:
  OnCall on_call_;
  std::map<std::pair<uint32_t, NameId>, std::unique_ptr<Group>> groups_;
};

// Every call of those funcs in a run held whole, sorted by (comm, func, index).
std::vector<P2pCall> p2pCalls(const RunModel& run);

}  // namespace commtrace::report
