// Joins the ranks' records into op instances as the loader delivers them, and hands each
// instance on as soon as it is whole, so that what is held is the instances still open,
// not the run: comm infos into Communicators (keyed by restart generation and comm id),
// collectives into instances with one MemberView seat per comm rank, sends and receives
// into transfers. Runs on one thread. A record whose place is not known yet (its process's
// comm info was in a damaged chunk) waits until finish(), which also settles global ranks,
// world size and missing ranks, and hands on what never became whole.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tools/report/load/instance_index.h"
#include "tools/report/load/lockstep_reader.h"
#include "tools/report/load/process_reader.h"
#include "tools/report/load/run_model.h"

namespace commtrace::report {

// What receives the joined ops. Communicator indices are into RunModel::comms, numbered in
// the order the joiner first saw each communicator (its comm info, near enough the order the
// job made them); a number never changes, so nothing a sink keeps by communicator is renumbered.
class JoinedOpSink {
 public:
  virtual ~JoinedOpSink() = default;
  // `instance.first_member` is meaningless here: its seats are `members`, in comm-rank order.
  virtual void collective(const CollInstance& instance, std::span<const MemberView> members) = 0;
  virtual void transfer(const P2pTransfer& transfer) = 0;
  // The run holds this many processes: told before its first op, and again when a followed
  // run gains a file. A sample kept per process takes its size from it (width_budget.h).
  virtual void runWidth(size_t /*processes*/) {}
  // Every op has been handed on.
  virtual void finish() {}
};

// What the joiner needs to know of a process before its records arrive.
struct ProcessIdentity {
  int header_rank = -1;
  uint32_t restart_count = 0;
};

class OpJoiner {
 public:
  // run.processes must hold every process (indexed as RecordBatch::process); the joiner
  // fills run.comms, run.world_size, run.missing_ranks, the processes' ranks and issues.
  OpJoiner(RunModel& run, std::vector<ProcessIdentity> processes, JoinedOpSink& sink);

  // A process whose file appeared after the joiner was made (a run followed while its job
  // writes it): its batches carry the index returned, which is run.processes' next.
  int addProcess(ProcessIdentity identity);
  void add(const RecordBatch& batch);
  // Call once run.processes is complete: places waiting records, resolves ranks, hands on
  // the instances still open (seats never recorded stay process -1).
  void finish();

  uint64_t openCollectives() const { return open_colls_.size() - free_colls_.size(); }
  // Counts each process's seats in instances and transfers still open there, as it joins
  // (nullptr: no more).
  void countLeadsIn(FileLeads* leads) { leads_ = leads; }

 private:
  struct Place {  // a process's seat in one communicator
    uint64_t comm_id;
    uint32_t comm;  // index into run.comms
    int32_t rank;
  };
  // A process's seats. Found by a scan from the last hit while few (a process is in a handful
  // of communicators), by a hash past kScanned: a file of 100,000 communicators took 15 s of
  // scans to join.
  class Places {
   public:
    static constexpr size_t kScanned = 16;
    const Place* find(uint64_t comm_id);
    void add(const Place& place);
    const std::vector<Place>& all() const { return list_; }

   private:
    std::vector<Place> list_;
    size_t last_ = 0;
    std::unordered_map<uint64_t, uint32_t> index_;  // comm_id -> position in list_, past kScanned
  };
  struct OpenColl {
    CollInstance instance;
    std::vector<MemberView> seats;
    uint32_t filled = 0;
  };
  struct P2pKey {
    uint32_t comm;
    int32_t src, dst;  // comm ranks
    uint64_t op_index;
    bool operator==(const P2pKey&) const = default;
  };
  struct P2pKeyHash {
    size_t operator()(const P2pKey& k) const {
      return std::hash<uint64_t>()(k.op_index * 0x9E3779B97F4A7C15ull ^ (uint64_t(uint32_t(k.src)) << 32 | uint32_t(k.dst)) ^
                                   (uint64_t{k.comm} << 48));
    }
  };

  uint32_t commFor(int process, uint64_t comm_id);
  void addCommInfo(int process, const CommInfoRow& info);
  const Place* placeOf(int process, uint64_t comm_id);
  bool addColl(const CollRow& row);
  bool addP2p(const P2pRow& row);
  static constexpr size_t kSlotsKeepingSeats = 4096;
  uint32_t openInstance(const CollRow& row, uint32_t comm);
  void handOn(uint32_t open);
  void placeWaiting();
  bool seatInOnlyOpenSeat(int process, uint64_t comm_id);
  void resolveRanks();
  void findMissingRanks();
  void noteUnplaced();
  void dropImplausibleRanks();

  RunModel& run_;
  JoinedOpSink& sink_;
  std::vector<ProcessIdentity> identity_;
  std::vector<int> rank_from_comm_info_;  // per process: a comm info's global_rank, -1 if none
  std::map<std::pair<uint32_t, uint64_t>, uint32_t> comm_index_;  // (restart, comm id) -> comm
  std::vector<Places> places_;                                    // per process
  InstanceIndex instances_;                 // -> index into open_colls_
  std::vector<OpenColl> open_colls_;        // slots, reused through free_colls_
  std::vector<uint32_t> free_colls_;
  std::unordered_map<P2pKey, P2pTransfer, P2pKeyHash> open_transfers_;  // one side seen so far
  std::vector<CollRow> waiting_colls_;
  std::vector<P2pRow> waiting_p2ps_;
  std::vector<uint64_t> unplaced_;    // per process: records no communicator seat was found for
  std::vector<uint64_t> duplicates_;  // per process: a second record for a filled seat
  std::vector<uint64_t> implausible_;  // per process: ranks or sizes past any job, not believed
  FileLeads* leads_ = nullptr;
};

}  // namespace commtrace::report
