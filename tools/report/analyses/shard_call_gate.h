// In a shard of a run (report --shard), the pieces of AlltoAll, Gather and Scatter calls:
// the loader hands on every piece whatever its time (time_window.h), as a call's pieces start
// apart and a cut between shards may fall among them. The gate groups them all into calls
// (p2p_calls.h), as every shard does alike, and hands on the pieces of the calls that started
// in the shard's window, when the call is whole: each call, and each of its pieces, in
// exactly one shard.
#pragma once

#include <cstdint>
#include <map>
#include <tuple>

#include "tools/report/analyses/p2p_calls.h"
#include "tools/report/load/op_stream.h"
#include "tools/report/load/run_model.h"

namespace commtrace::report {

class ShardCallGate {
 public:
  ShardCallGate(const RunModel& run, JoinedOpSink& next);
  void piece(const P2pTransfer& transfer);
  // The calls still open, then the pieces no call took (by their own time).
  void finish();

 private:
  void call(const P2pCall& call);
  using Key = std::tuple<uint32_t, int32_t, int32_t, uint64_t>;  // (comm, sender, receiver, op index): P2pCall::Piece's
  const RunModel& run_;
  JoinedOpSink& next_;
  P2pCallJoiner calls_;
  std::multimap<Key, P2pTransfer> held_;  // pieces whose call is not whole yet
};

}  // namespace commtrace::report
