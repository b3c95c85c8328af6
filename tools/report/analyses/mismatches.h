// Mismatches and hangs: ops some ranks recorded and others, whose files exist, never did,
// and ops started but never finished.
#pragma once

#include <cstdint>
#include <map>
#include <tuple>
#include <span>
#include <vector>

#include "tools/report/analyses/mismatches_rows.h"
#include "tools/report/load/archived_name.h"
#include "tools/report/load/op_joiner.h"
#include "tools/report/load/run_model.h"

namespace commtrace::report {

constexpr size_t kMaxMismatchRows = 1000;

// Rows, at most kMaxMismatchRows: the "file ends" rows, then the others by communicator and
// seq; total: how many there were.
// - "missing": a rank with a file lacks an instance although it recorded later ops of the
//   communicator (collectives: later op indices; p2p: later transfers of the same pair).
// - "file ends": its file stops before that instance, or no readable file recorded that
//   member at all (missing, or damaged before the record naming its seat): one row per
//   (communicator, rank) naming the first instance it lacks.
// - "unfinished": a member started (GPU start, or a CPU start where other members have GPU
//   ends) but has no GPU end: a hang, or a process killed mid-op.
//
// The collectives' part is kept as they stream by (CollGapTally): each seat's last recorded
// op index, and the instances with an empty or unfinished seat (none in a healthy run).
class CollGapTally : public JoinedOpSink {
 public:
  struct Gap {
    uint32_t comm = 0;
    NameId func = 0;
    uint64_t seq = 0;
    uint64_t op_index = 0;
    std::vector<int> empty;       // comm ranks that recorded no such op
    std::vector<int> unfinished;  // comm ranks that started it and never finished
    template <class Archive>
    void serialize(Archive& ar) {
      ar(comm, archived(func), seq, op_index, empty, unfinished);
    }
  };

  void collective(const CollInstance& instance, std::span<const MemberView> members) override;
  void transfer(const P2pTransfer&) override {}
  // Adds another tally of the same run (finished, or both not yet): a shard's.
  void merge(const CollGapTally& other);

  const std::vector<Gap>& gaps() const { return gaps_; }
  // The last op index (comm, comm_rank) recorded, plus one; 0 when it recorded none.
  uint64_t lastRecordedPlusOne(uint32_t comm, int comm_rank) const;
  // A shard's state (tools/report/shard/).
  template <class Archive>
  void serialize(Archive& ar) {
    ar(last_plus_one_, gaps_);
  }

 private:
  std::vector<std::vector<uint64_t>> last_plus_one_;  // [comm][comm rank]
  std::vector<Gap> gaps_;
};

// The transfers' part, kept as they stream by: each (communicator, sender, receiver) side's
// last recorded transfer index, and the transfers with a side missing or unfinished (none
// in a healthy run). Counts every transfer handed on.
class TransferGapTally : public JoinedOpSink {
 public:
  void collective(const CollInstance&, std::span<const MemberView>) override {}
  void transfer(const P2pTransfer& transfer) override;
  void finish() override;
  // Adds another tally of the same run (finished, or both not yet): a shard's.
  void merge(const TransferGapTally& other);

  uint64_t transfers() const { return transfers_; }
  // Sorted by (communicator, transfer index, sender, receiver) once finished.
  const std::vector<P2pTransfer>& gaps() const { return gaps_; }
  // The last transfer index of (comm, sender, receiver) the sender's side (send) or the
  // receiver's recorded, plus one; 0 when it recorded none.
  uint64_t lastRecordedPlusOne(uint32_t comm, int sender, int receiver, bool send) const;
  // A shard's state (tools/report/shard/); gaps_ as shard/run_model_archive.h writes transfers.
  template <class Archive>
  void serialize(Archive& ar) {
    ar(transfers_, last_plus_one_, gaps_);
  }

 private:
  using Side = std::tuple<uint32_t, int, int, bool>;  // (comm, sender, receiver, the sender's side)
  void sortGaps();

  uint64_t transfers_ = 0;
  std::map<Side, uint64_t> last_plus_one_;
  std::vector<P2pTransfer> gaps_;
};

// lost_to_drops, when given: how many collective instances miss a member whose process
// dropped records (lost by the tracer, not skipped by the rank).
std::vector<MismatchRow> findMismatches(const RunModel& run, const CollGapTally& collectives,
                                        const TransferGapTally& transfers, uint64_t& total, uint64_t* lost_to_drops = nullptr);
// The same for a run held whole.
std::vector<MismatchRow> findMismatches(const RunModel& run, uint64_t& total);

}  // namespace commtrace::report
