#include "tools/report/analyses/mismatches.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "tools/report/analyses/rank_index.h"
#include "tools/report/load/op_stream.h"

namespace commtrace::report {
namespace {

// The member's rank as MismatchRow prints it: global when every one is known, else comm ranks.
void setRanks(const Communicator& comm, const std::vector<int>& comm_ranks, MismatchRow& row) {
  std::vector<int> global;
  for (int r : comm_ranks) global.push_back(globalRankOf(comm, r));
  row.comm_ranks = std::find(global.begin(), global.end(), -1) != global.end();
  row.missing_ranks = row.comm_ranks ? comm_ranks : global;
}

bool hasFile(const Communicator& comm, int comm_rank) {
  return static_cast<size_t>(comm_rank) < comm.processes.size() && comm.processes[comm_rank] >= 0;
}

bool unfinished(const MemberView& m, bool others_have_gpu_ends) {
  if (m.process < 0 || m.gpu_end_ns != 0) return false;
  return m.gpu_start_ns != 0 || (m.cpu_start_ns != 0 && others_have_gpu_ends);
}

// A transfer a side of which is missing or unfinished: all MismatchFinder looks at.
bool hasGap(const P2pTransfer& t) {
  return t.send.process < 0 || t.recv.process < 0 || unfinished(t.send, t.recv.gpu_end_ns != 0) ||
         unfinished(t.recv, t.send.gpu_end_ns != 0);
}

class MismatchFinder {
 public:
  explicit MismatchFinder(const RunModel& run) : run_(run) {}

  // In the run's order of instances (by communicator and op index), whatever order the
  // stream handed them on in.
  void collectives(const CollGapTally& tally) {
    std::vector<const CollGapTally::Gap*> gaps;
    for (const CollGapTally::Gap& g : tally.gaps()) gaps.push_back(&g);
    std::sort(gaps.begin(), gaps.end(), [&](const CollGapTally::Gap* a, const CollGapTally::Gap* b) {
      if (std::tie(a->comm, a->op_index, a->seq) != std::tie(b->comm, b->op_index, b->seq))
        return std::tie(a->comm, a->op_index, a->seq) < std::tie(b->comm, b->op_index, b->seq);
      return run_.name(a->func) < run_.name(b->func);
    });
    for (const CollGapTally::Gap* g : gaps) collective(*g, tally);
  }

  void transfers(const TransferGapTally& tally) {
    for (const P2pTransfer& t : tally.gaps())
      for (const bool send : {true, false}) transferSide(t, send, tally);
  }

  // The file ends first (one per rank and communicator, so few), then the rest up to the cap.
  std::vector<MismatchRow> finish(uint64_t& total, uint64_t* lost_to_drops) {
    total = file_ends_.size() + rows_.size() + dropped_;
    if (lost_to_drops != nullptr) *lost_to_drops = lost_to_drops_;
    std::vector<MismatchRow> out;
    for (auto& [key, row] : file_ends_) out.push_back(std::move(row));
    const size_t room = kMaxMismatchRows > out.size() ? kMaxMismatchRows - out.size() : 0;
    rows_.resize(std::min(rows_.size(), room));
    std::stable_sort(rows_.begin(), rows_.end(), [](const MismatchRow& a, const MismatchRow& b) {
      return std::tie(a.comm, a.seq) < std::tie(b.comm, b.seq);
    });
    for (MismatchRow& row : rows_) out.push_back(std::move(row));
    return out;
  }

 private:
  MismatchRow rowFor(uint32_t comm_index, NameId func, uint64_t seq) const {
    const Communicator& comm = run_.comms[comm_index];
    MismatchRow row;
    row.comm = comm.id;
    row.comm_name = std::string(run_.name(comm.name));
    row.func = std::string(run_.name(func));
    row.seq = seq;
    return row;
  }

  void keep(MismatchRow row) {
    if (rows_.size() < kMaxMismatchRows) rows_.push_back(std::move(row));
    else ++dropped_;
  }

  void collective(const CollGapTally::Gap& c, const CollGapTally& tally) {
    const Communicator& comm = run_.comms[c.comm];
    if (comm.one_rank_view) return;
    MismatchRow at = rowFor(c.comm, c.func, c.seq);
    at.op_index = c.op_index;
    std::vector<int> missing;
    for (const int rank : c.empty) {
      if (!hasFile(comm, rank)) fileEnds(c.comm, rank, at, MismatchRow::Why::kNoFile);
      else if (tally.lastRecordedPlusOne(c.comm, rank) > c.op_index + 1) missing.push_back(rank);
      else fileEnds(c.comm, rank, at, MismatchRow::Why::kTraceStops);
    }
    if (!missing.empty()) {
      MismatchRow row = rowOf(at, comm, missing, "missing", MismatchRow::Why::kRecordedLater);
      row.dropped_records = droppedRecords(c.comm, missing);
      if (row.dropped_records != 0) ++lost_to_drops_;
      keep(std::move(row));
    }
    if (!c.unfinished.empty()) keep(rowOf(at, comm, c.unfinished, "unfinished", MismatchRow::Why::kUnfinished));
  }

  void transferSide(const P2pTransfer& t, bool send, const TransferGapTally& tally) {
    const Communicator& comm = run_.comms[t.comm];
    const MemberView& side = send ? t.send : t.recv;
    const MemberView& other = send ? t.recv : t.send;
    MismatchRow at = rowFor(t.comm, t.func, t.op_index);
    at.op_index = t.op_index;
    at.transfer = true, at.send = send, at.src = t.send.comm_rank, at.dst = t.recv.comm_rank;
    if (unfinished(side, other.gpu_end_ns != 0)) keep(rowOf(at, comm, {side.comm_rank}, "unfinished", MismatchRow::Why::kUnfinished));
    if (side.process >= 0) return;
    if (!hasFile(comm, side.comm_rank)) return fileEnds(t.comm, side.comm_rank, at, MismatchRow::Why::kNoFile);
    if (tally.lastRecordedPlusOne(t.comm, t.send.comm_rank, t.recv.comm_rank, send) > t.op_index + 1)
      keep(rowOf(at, comm, {side.comm_rank}, "missing", MismatchRow::Why::kRecordedLater));
    else
      fileEnds(t.comm, side.comm_rank, at, MismatchRow::Why::kTraceStops);
  }

  static MismatchRow rowOf(const MismatchRow& at, const Communicator& comm, const std::vector<int>& comm_ranks, const char* kind,
                           MismatchRow::Why why) {
    MismatchRow row = at;
    row.kind = kind;
    row.why = why;
    setRanks(comm, comm_ranks, row);
    return row;
  }

  // A rank whose process dropped records (its ring full, its file unwritable) lost ops rather
  // than skipped them: said with the mismatch, which would otherwise read as the rank's doing.
  uint64_t droppedRecords(uint32_t comm, const std::vector<int>& comm_ranks) const {
    uint64_t dropped = 0;
    for (int comm_rank : comm_ranks)
      if (const ProcessInfo* process = processOf(run_.comms[comm], comm_rank)) dropped += process->dropped_records;
    return dropped;
  }

  // One row per (communicator, rank): the first instance its file stops before. None where
  // the file is still being written: those ops are on their way to it.
  void fileEnds(uint32_t comm, int comm_rank, const MismatchRow& at, MismatchRow::Why why) {
    if (file_ends_.count({comm, comm_rank}) != 0) return;
    const ProcessInfo* process = processOf(run_.comms[comm], comm_rank);
    if (process != nullptr && run_.beingWritten(*process)) return;
    MismatchRow row = rowOf(at, run_.comms[comm], {comm_rank}, "file ends", why);
    if (process != nullptr && process->file_state == ProcessInfo::FileState::kOpen) row.left_open_utc_ns = process->modified_utc_ns;
    row.dropped_records = droppedRecords(comm, {comm_rank});
    file_ends_.emplace(std::make_pair(comm, comm_rank), std::move(row));
  }

  const ProcessInfo* processOf(const Communicator& comm, int comm_rank) const {
    return hasFile(comm, comm_rank) ? &run_.processes[static_cast<size_t>(comm.processes[comm_rank])] : nullptr;
  }

  const RunModel& run_;
  std::vector<MismatchRow> rows_;
  uint64_t dropped_ = 0;
  uint64_t lost_to_drops_ = 0;  // collective instances missing a member whose process dropped records
  std::map<std::pair<uint32_t, int>, MismatchRow> file_ends_;
};

}  // namespace

void CollGapTally::collective(const CollInstance& c, std::span<const MemberView> m) {
  if (last_plus_one_.size() <= c.comm) last_plus_one_.resize(c.comm + 1);
  std::vector<uint64_t>& last = last_plus_one_[c.comm];
  if (last.size() < m.size()) last.resize(m.size(), 0);
  Gap gap{.comm = c.comm, .func = c.func, .seq = c.seq, .op_index = c.op_index, .empty = {}, .unfinished = {}};
  const bool others_ended = std::any_of(m.begin(), m.end(), [](const MemberView& v) { return v.gpu_end_ns != 0; });
  for (size_t r = 0; r < m.size(); ++r) {
    const int rank = static_cast<int>(r);
    if (unfinished(m[r], others_ended)) gap.unfinished.push_back(rank);
    if (m[r].process >= 0) last[r] = std::max(last[r], c.op_index + 1);
    else gap.empty.push_back(rank);
  }
  if (!gap.empty.empty() || !gap.unfinished.empty()) gaps_.push_back(std::move(gap));
}


void CollGapTally::merge(const CollGapTally& other) {
  if (last_plus_one_.size() < other.last_plus_one_.size()) last_plus_one_.resize(other.last_plus_one_.size());
  for (size_t c = 0; c < other.last_plus_one_.size(); ++c) {
    std::vector<uint64_t>& last = last_plus_one_[c];
    const std::vector<uint64_t>& theirs = other.last_plus_one_[c];
    if (last.size() < theirs.size()) last.resize(theirs.size(), 0);
    for (size_t r = 0; r < theirs.size(); ++r) last[r] = std::max(last[r], theirs[r]);
  }
  gaps_.insert(gaps_.end(), other.gaps_.begin(), other.gaps_.end());
}

uint64_t CollGapTally::lastRecordedPlusOne(uint32_t comm, int comm_rank) const {
  if (comm >= last_plus_one_.size() || static_cast<size_t>(comm_rank) >= last_plus_one_[comm].size()) return 0;
  return last_plus_one_[comm][static_cast<size_t>(comm_rank)];
}

void TransferGapTally::transfer(const P2pTransfer& t) {
  ++transfers_;
  for (const bool send : {true, false}) {
    if ((send ? t.send : t.recv).process < 0) continue;
    uint64_t& last = last_plus_one_[{t.comm, t.send.comm_rank, t.recv.comm_rank, send}];
    last = std::max(last, t.op_index + 1);
  }
  if (hasGap(t)) gaps_.push_back(t);
}

void TransferGapTally::finish() {
  sortGaps();
}

void TransferGapTally::merge(const TransferGapTally& other) {
  transfers_ += other.transfers_;
  for (const auto& [side, theirs] : other.last_plus_one_) {
    uint64_t& last = last_plus_one_[side];
    last = std::max(last, theirs);
  }
  gaps_.insert(gaps_.end(), other.gaps_.begin(), other.gaps_.end());
  sortGaps();
}

void TransferGapTally::sortGaps() {
  std::sort(gaps_.begin(), gaps_.end(), [](const P2pTransfer& a, const P2pTransfer& b) {
    return std::tie(a.comm, a.op_index, a.send.comm_rank, a.recv.comm_rank) <
           std::tie(b.comm, b.op_index, b.send.comm_rank, b.recv.comm_rank);
  });
}

uint64_t TransferGapTally::lastRecordedPlusOne(uint32_t comm, int sender, int receiver, bool send) const {
  const auto it = last_plus_one_.find({comm, sender, receiver, send});
  return it == last_plus_one_.end() ? 0 : it->second;
}

std::vector<MismatchRow> findMismatches(const RunModel& run, uint64_t& total) {
  CollGapTally collectives;
  TransferGapTally transfers;
  OpFanout both({&collectives, &transfers});
  replayRun(run, both);
  return findMismatches(run, collectives, transfers, total);
}

std::vector<MismatchRow> findMismatches(const RunModel& run, const CollGapTally& collectives,
                                        const TransferGapTally& transfers, uint64_t& total, uint64_t* lost_to_drops) {
  MismatchFinder finder(run);
  finder.collectives(collectives);
  finder.transfers(transfers);
  return finder.finish(total, lost_to_drops);
}

}  // namespace commtrace::report
