// Joins the ranks' records into one RunModel as the loader threads deliver them: comm
// infos into Communicators (keyed by restart generation and comm id), collectives into
// CollInstances with one MemberView slot per comm rank, sends and receives into
// P2pTransfers. Runs on one thread. A record whose place is not known yet (its process's
// comm info was in a damaged chunk) waits until finish(), which also settles global ranks,
// world size, missing ranks and the final order.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tools/report/load/instance_index.h"
#include "tools/report/load/process_reader.h"
#include "tools/report/run_model.h"

namespace commtrace::report {

// What the merger needs to know of a process before its records arrive.
struct ProcessIdentity {
  int header_rank = -1;
  uint32_t restart_count = 0;
};

class RunMerger {
 public:
  RunMerger(RunModel& run, std::vector<ProcessIdentity> processes);

  void add(const RecordBatch& batch);
  // Call once run.processes is complete: places waiting records, resolves ranks, sorts.
  void finish();

 private:
  struct Place {  // a process's seat in one communicator
    uint64_t comm_id;
    uint32_t comm;  // index into run.comms
    int32_t rank;
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
  uint32_t newInstance(const CollRow& row, uint32_t comm);
  void placeWaiting();
  bool seatInOnlyOpenSeat(int process, uint64_t comm_id);
  void resolveRanks();
  void sortComms();
  void sortOps();
  void findMissingRanks();
  void noteUnplaced();

  RunModel& run_;
  std::vector<ProcessIdentity> identity_;
  std::vector<int> rank_from_comm_info_;  // per process: a comm info's global_rank, -1 if none
  std::map<std::pair<uint32_t, uint64_t>, uint32_t> comm_index_;  // (restart, comm id) -> comm
  std::vector<std::vector<Place>> places_;                        // per process
  std::vector<size_t> last_place_;                                // per process: the last hit
  InstanceIndex instances_;
  std::unordered_map<P2pKey, uint32_t, P2pKeyHash> open_transfers_;  // one side seen so far
  std::vector<CollRow> waiting_colls_;
  std::vector<P2pRow> waiting_p2ps_;
  std::vector<uint64_t> unplaced_;    // per process: records no communicator seat was found for
  std::vector<uint64_t> duplicates_;  // per process: a second record for a filled seat
};

}  // namespace commtrace::report
