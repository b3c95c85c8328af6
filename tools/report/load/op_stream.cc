#include "tools/report/load/op_stream.h"

#include <numeric>

namespace commtrace::report {

void replayRun(const RunModel& run, JoinedOpSink& sink) {
  for (const CollInstance& c : run.collectives) sink.collective(c, {run.membersOf(c), c.n_members});
  for (const P2pTransfer& t : run.transfers) sink.transfer(t);
  std::vector<uint32_t> identity(run.comms.size());
  std::iota(identity.begin(), identity.end(), 0u);
  sink.finish(identity);
}

void OpFanout::collective(const CollInstance& instance, std::span<const MemberView> members) {
  for (JoinedOpSink* sink : sinks_) sink->collective(instance, members);
}

void OpFanout::transfer(const P2pTransfer& transfer) {
  for (JoinedOpSink* sink : sinks_) sink->transfer(transfer);
}

void OpFanout::finish(std::span<const uint32_t> new_index) {
  for (JoinedOpSink* sink : sinks_) sink->finish(new_index);
}

}  // namespace commtrace::report
