// The report as a stream: analyses that take a run one joined op at a time are
// JoinedOpSinks (load/op_joiner.h), fed by the joiner while the files are read, or by
// replayRun() from a RunModel held whole (PyTorch profiler traces, tests). Either way an analysis sees
// each collective instance and each transfer once, in about the order they were issued (not
// each rank's program order exactly: the loader joins an instance once its last member is read), then finish()
// with the communicators' final numbering; what it keeps is its own summary, never the ops.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tools/report/load/op_joiner.h"
#include "tools/report/load/run_model.h"

namespace commtrace::report {

// Hands every op of a finished RunModel to `sink`, then finish() with the identity
// numbering (the model's communicators are already in their final order).
void replayRun(const RunModel& run, JoinedOpSink& sink);

// Several sinks fed from one joiner, in the order given.
class OpFanout : public JoinedOpSink {
 public:
  explicit OpFanout(std::vector<JoinedOpSink*> sinks) : sinks_(std::move(sinks)) {}
  void collective(const CollInstance& instance, std::span<const MemberView> members) override;
  void transfer(const P2pTransfer& transfer) override;
  void finish(std::span<const uint32_t> new_index) override;

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

// The new index of a communicator a sink recorded under its joining-time index.
inline uint32_t renumbered(std::span<const uint32_t> new_index, uint32_t comm) {
  return comm < new_index.size() ? new_index[comm] : comm;
}

// Rekeys a map whose keys hold a joining-time communicator index to the final numbering;
// comm_of(key) names the key's communicator field.
template <class Map, class CommOf>
void renumberKeys(Map& map, std::span<const uint32_t> new_index, CommOf comm_of) {
  Map out;
  for (auto& [key, value] : map) {
    auto k = key;
    comm_of(k) = renumbered(new_index, comm_of(k));
    out.emplace(std::move(k), std::move(value));
  }
  map = std::move(out);
}

}  // namespace commtrace::report
