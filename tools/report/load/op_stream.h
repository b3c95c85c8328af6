// The report as a stream: analyses that take a run one joined op at a time are
// JoinedOpSinks (load/op_joiner.h), fed by the joiner while the files are read, or by
// replayRun() from a RunModel held whole (PyTorch profiler traces, tests). Either way an analysis sees
// each collective instance and each transfer once, in about the order they were issued (not
// each rank's program order exactly: the loader joins an instance once its last member is read), then finish();
// what it keeps is its own summary, never the ops.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tools/report/load/op_joiner.h"
#include "tools/report/load/run_model.h"

namespace commtrace::report {

// Tells `sink` the run's width, hands it every op of a finished RunModel, then finish().
void replayRun(const RunModel& run, JoinedOpSink& sink);

// Several sinks fed from one joiner, in the order given.
class OpFanout : public JoinedOpSink {
 public:
  explicit OpFanout(std::vector<JoinedOpSink*> sinks) : sinks_(std::move(sinks)) {}
  void collective(const CollInstance& instance, std::span<const MemberView> members) override;
  void transfer(const P2pTransfer& transfer) override;
  void runWidth(size_t processes) override;
  void finish() override;

 private:
  std::vector<JoinedOpSink*> sinks_;
};

// A well-spread hash of an instance's identity, for the samples that keep the instances of
// smallest hash (bottom-k): uniform, and the same whatever order the ops arrive in.
uint64_t instanceHash(NameId func, uint64_t seq, uint64_t op_index);

// Every member's MemberView::gpu_gap_ns of a run held whole, exactly, from each process's
// ops sorted by GPU start; indexed like RunModel::members, and per transfer [send, recv].
struct HeldGaps {
  std::vector<uint64_t> members;
  std::vector<std::pair<uint64_t, uint64_t>> transfers;
};
HeldGaps gapsOf(const RunModel& run);

}  // namespace commtrace::report
