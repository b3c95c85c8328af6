// The joined ops kept whole in the RunModel, for the analyses that still read the run as a
// whole (and for `export`): instances, their seats and transfers appended as they come,
// then ordered by (communicator, op index) so that the model does not depend on the order
// the loader threads delivered them in.
#pragma once

#include "tools/report/load/op_joiner.h"

namespace commtrace::report {

class RunModelSink : public JoinedOpSink {
 public:
  // keep_ops false: the communicators only (LoadOptions::keep_ops).
  RunModelSink(RunModel& run, bool keep_ops) : run_(run), keep_ops_(keep_ops) {
    run.ops_kept = keep_ops;
  }

  void collective(const CollInstance& instance, std::span<const MemberView> members) override;
  void transfer(const P2pTransfer& transfer) override;
  void finish() override;

 private:
  void sortOps();

  RunModel& run_;
  const bool keep_ops_;
};

}  // namespace commtrace::report
