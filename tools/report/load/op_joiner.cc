#include "tools/report/load/op_joiner.h"

#include <algorithm>
#include <set>
#include <tuple>

namespace commtrace::report {
namespace {

// Ranks disagree on nothing here in a healthy run; where one left a field empty (bytes of
// an "Unknown" datatype, an algorithm its profiler version did not report) another fills it.
void fillMissing(CollInstance& c, const CollRow& r) {
  if (c.count == 0) c.count = r.count;
  if (c.bytes == 0) c.bytes = r.bytes;
  if (c.datatype == 0) c.datatype = r.datatype;
  if (c.algo == 0) c.algo = r.algo;
  if (c.proto == 0) c.proto = r.proto;
  if (c.root < 0) c.root = r.root;
  if (c.n_channels == 0) c.n_channels = r.n_channels;
  if (c.path == 0) c.path = r.path;
}

void fillMissing(P2pTransfer& t, const P2pRow& r) {
  if (t.count == 0) t.count = r.count;
  if (t.bytes == 0) t.bytes = r.bytes;
  if (t.datatype == 0) t.datatype = r.datatype;
  if (t.n_channels == 0) t.n_channels = r.n_channels;
}

InstanceIndex::Key instanceKey(const CollRow& row, uint32_t comm) {
  return row.graph_captured ? InstanceIndex::Key{comm, InstanceIndex::kByOpIndex, row.op_index} : InstanceIndex::Key{comm, row.func, row.seq};
}

// Rows ahead of the one being joined whose seats are fetched meanwhile: thousands of
// instances are open, and writing a row's seat missed the cache on most rows.
constexpr size_t kSeatsAhead = 8;

}  // namespace

OpJoiner::OpJoiner(RunModel& run, std::vector<ProcessIdentity> processes, JoinedOpSink& sink)
    : run_(run),
      sink_(sink),
      identity_(std::move(processes)),
      rank_from_comm_info_(identity_.size(), -1),
      places_(identity_.size()),
      unplaced_(identity_.size(), 0),
      duplicates_(identity_.size(), 0),
      implausible_(identity_.size(), 0) {
  if (!identity_.empty()) sink_.runWidth(identity_.size());
}

int OpJoiner::addProcess(ProcessIdentity identity) {
  identity_.push_back(identity);
  rank_from_comm_info_.push_back(-1);
  places_.emplace_back();
  unplaced_.push_back(0);
  duplicates_.push_back(0);
  implausible_.push_back(0);
  sink_.runWidth(identity_.size());
  return static_cast<int>(identity_.size() - 1);
}

void OpJoiner::add(const RecordBatch& batch) {
  for (const CommInfoRow& info : batch.comm_infos) addCommInfo(batch.process, info);
  // 2 x kSeatsAhead rows ahead, a row's open instance is fetched; kSeatsAhead ahead, its seat
  // there (the instance's record is in the cache by then). Lookups only: the row is joined in turn.
  const auto fetch = [&](const CollRow& row, bool seat) {
    const Place* place = placeOf(row.view.process, row.comm_id);
    if (place == nullptr) return;
    const uint32_t open = instances_.find(instanceKey(row, place->comm));
    if (open >= open_colls_.size()) return;  // none open (kNone), or closed
    if (!seat) return __builtin_prefetch(&open_colls_[open]);
    const std::vector<MemberView>& seats = open_colls_[open].seats;
    if (static_cast<size_t>(place->rank) < seats.size()) __builtin_prefetch(&seats[static_cast<size_t>(place->rank)], 1);
  };
  for (size_t i = 0; i < batch.colls.size(); ++i) {
    if (i + 2 * kSeatsAhead < batch.colls.size()) fetch(batch.colls[i + 2 * kSeatsAhead], false);
    if (i + kSeatsAhead < batch.colls.size()) fetch(batch.colls[i + kSeatsAhead], true);
    if (!addColl(batch.colls[i])) waiting_colls_.push_back(batch.colls[i]);
  }
  for (const P2pRow& row : batch.p2ps) {
    if (!addP2p(row)) waiting_p2ps_.push_back(row);
  }
}

uint32_t OpJoiner::commFor(int process, uint64_t comm_id) {
  const uint32_t restart = identity_[static_cast<size_t>(process)].restart_count;
  const auto [it, inserted] = comm_index_.try_emplace({restart, comm_id}, static_cast<uint32_t>(run_.comms.size()));
  if (inserted) {
    Communicator& c = run_.comms.emplace_back();
    c.id = comm_id;
    c.restart_count = restart;
  }
  return it->second;
}

void OpJoiner::addCommInfo(int process, const CommInfoRow& info) {
  // A record's numbers are whatever its bytes say: a size past any job would size tables by it.
  if (info.size > kMaxRanks || info.global_rank >= kMaxRanks) {
    ++implausible_[static_cast<size_t>(process)];
    if (info.size > kMaxRanks) return;
  }
  const uint32_t index = commFor(process, info.comm_id);
  Communicator& comm = run_.comms[index];
  if (comm.size == 0 && info.size > 0) {
    comm.size = info.size;
    comm.global_ranks.assign(static_cast<size_t>(info.size), -1);
    comm.processes.assign(static_cast<size_t>(info.size), -1);
  }
  if (comm.name == 0) comm.name = info.name;
  if (comm.n_nodes == 0) comm.n_nodes = info.n_nodes;
  if (info.rank < 0 || info.rank >= comm.size) return;
  const size_t p = static_cast<size_t>(process);
  const int32_t global_rank = info.global_rank < kMaxRanks ? info.global_rank : -1;
  if (global_rank >= 0 && rank_from_comm_info_[p] < 0) rank_from_comm_info_[p] = global_rank;
  const size_t r = static_cast<size_t>(info.rank);
  // One process can describe a communicator twice: the profiler plugin knows its seat, the
  // preload face's NCCL wrappers also know the global rank. The second fills what the first lacked.
  if (placeOf(process, info.comm_id) != nullptr) {
    if (comm.global_ranks[r] < 0) comm.global_ranks[r] = global_rank;
    return;
  }
  if (comm.global_ranks[r] < 0) comm.global_ranks[r] = global_rank >= 0 ? global_rank : identity_[p].header_rank;
  if (comm.processes[r] < 0) comm.processes[r] = process;
  places_[p].add({info.comm_id, index, info.rank});
}

const OpJoiner::Place* OpJoiner::placeOf(int process, uint64_t comm_id) { return places_[static_cast<size_t>(process)].find(comm_id); }

const OpJoiner::Place* OpJoiner::Places::find(uint64_t comm_id) {
  if (last_ < list_.size() && list_[last_].comm_id == comm_id) return &list_[last_];
  if (list_.size() > kScanned) {
    const auto it = index_.find(comm_id);
    if (it == index_.end()) return nullptr;
    last_ = it->second;
    return &list_[last_];
  }
  for (size_t i = 0; i < list_.size(); ++i) {
    if (list_[i].comm_id == comm_id) {
      last_ = i;
      return &list_[i];
    }
  }
  return nullptr;
}

void OpJoiner::Places::add(const Place& place) {
  list_.push_back(place);
  if (list_.size() <= kScanned) return;
  if (index_.empty())
    for (size_t i = 0; i + 1 < list_.size(); ++i) index_.emplace(list_[i].comm_id, static_cast<uint32_t>(i));
  index_.emplace(place.comm_id, static_cast<uint32_t>(list_.size() - 1));
}

uint32_t OpJoiner::openInstance(const CollRow& row, uint32_t comm) {
  uint32_t open;
  if (free_colls_.empty()) {
    open = static_cast<uint32_t>(open_colls_.size());
    open_colls_.emplace_back();
  } else {
    open = free_colls_.back();
    free_colls_.pop_back();
  }
  OpenColl& o = open_colls_[open];
  const uint32_t size = static_cast<uint32_t>(run_.comms[comm].size);
  o.instance = CollInstance{};
  CollInstance& c = o.instance;
  c.comm = comm;
  c.func = row.func;
  c.seq = row.seq;
  c.op_index = row.op_index;
  c.graph_captured = row.graph_captured;
  c.n_members = size;
  fillMissing(c, row);
  // Slots are reused whatever the communicator: one that held a world instance's seats would
  // keep them for every small instance after, and in a run with both, in time every slot would
  // (64 KB each at 1,024 ranks).
  if (o.seats.capacity() > 2 * size + 16) std::vector<MemberView>().swap(o.seats);
  o.seats.assign(size, MemberView{});
  for (uint32_t r = 0; r < size; ++r) o.seats[r].comm_rank = static_cast<int32_t>(r);
  o.filled = 0;
  return open;
}

void OpJoiner::handOn(uint32_t open) {
  OpenColl& o = open_colls_[open];
  sink_.collective(o.instance, o.seats);
  if (leads_ != nullptr)
    for (const MemberView& seat : o.seats) leads_->seat(seat.process, -1);
  // Past kSlotsKeepingSeats free slots, a slot gives its seats back: a wide run opens
  // hundreds of thousands of small instances at once, whose slots kept their storage after.
  if (free_colls_.size() >= kSlotsKeepingSeats) std::vector<MemberView>().swap(o.seats);
  free_colls_.push_back(open);
}

bool OpJoiner::addColl(const CollRow& row) {
  const Place* place = placeOf(row.view.process, row.comm_id);
  if (place == nullptr) return false;
  const InstanceIndex::Key key = instanceKey(row, place->comm);
  uint32_t open = instances_.find(key);
  if (open == InstanceIndex::kClosed) {
    ++duplicates_[static_cast<size_t>(row.view.process)];
    return true;
  }
  if (open == InstanceIndex::kNone) {
    open = openInstance(row, place->comm);
    instances_.store(key, open);
  }
  OpenColl& o = open_colls_[open];
  fillMissing(o.instance, row);
  MemberView& seat = o.seats[static_cast<uint32_t>(place->rank)];
  if (seat.process >= 0) {
    ++duplicates_[static_cast<size_t>(row.view.process)];
    return true;
  }
  seat = row.view;
  seat.comm_rank = place->rank;
  if (leads_ != nullptr) leads_->seat(seat.process, 1);
  if (++o.filled == o.instance.n_members) {
    instances_.close(key);
    handOn(open);
  }
  return true;
}

bool OpJoiner::addP2p(const P2pRow& row) {
  const Place* place = placeOf(row.view.process, row.comm_id);
  if (place == nullptr) return false;
  if (row.peer < 0 || row.peer >= run_.comms[place->comm].size) return false;
  const P2pKey key{place->comm, row.is_send ? place->rank : row.peer, row.is_send ? row.peer : place->rank, row.op_index};
  const auto [it, inserted] = open_transfers_.try_emplace(key);
  P2pTransfer& t = it->second;
  if (inserted) {
    t.comm = place->comm;
    t.comm_size = run_.comms[place->comm].size;
    t.func = row.api_func;
    t.op_index = row.op_index;
    t.send.comm_rank = key.src;
    t.recv.comm_rank = key.dst;
  }
  fillMissing(t, row);
  MemberView& side = row.is_send ? t.send : t.recv;
  if (side.process >= 0) {
    ++duplicates_[static_cast<size_t>(row.view.process)];
    return true;
  }
  side = row.view;
  side.comm_rank = place->rank;
  (row.is_send ? t.send_path : t.recv_path) = row.path;
  // A matched pair is handed on and never looked up again.
  if (t.send.process >= 0 && t.recv.process >= 0) {
    if (leads_ != nullptr) leads_->seat(row.is_send ? t.recv.process : t.send.process, -1);
    sink_.transfer(t);
    open_transfers_.erase(it);
  } else if (leads_ != nullptr) {
    leads_->seat(row.view.process, 1);
  }
  return true;
}

void OpJoiner::finish() {
  resolveRanks();
  placeWaiting();
  for (Communicator& comm : run_.comms) {
    for (size_t r = 0; r < comm.processes.size(); ++r) {
      if (comm.global_ranks[r] < 0 && comm.processes[r] >= 0) {
        comm.global_ranks[r] = run_.processes[static_cast<size_t>(comm.processes[r])].rank;
      }
    }
  }
  // What never became whole: seats no file filled (a missing rank, a mismatch, a hang).
  std::vector<bool> is_free(open_colls_.size(), false);
  for (uint32_t f : free_colls_) is_free[f] = true;
  for (uint32_t open = 0; open < open_colls_.size(); ++open) {
    if (!is_free[open]) handOn(open);
  }
  open_colls_ = {};
  free_colls_ = {};
  for (const auto& [key, transfer] : open_transfers_) sink_.transfer(transfer);
  open_transfers_ = {};
  findMissingRanks();
  noteUnplaced();
  sink_.finish();
}

// Global rank: the header's (the launcher's RANK), else a comm info's, else the seat in a
// communicator as large as the world.
void OpJoiner::resolveRanks() {
  int world = 0;
  for (size_t p = 0; p < run_.processes.size(); ++p) {
    int& world_size = run_.processes[p].world_size;
    if (world_size > kMaxRanks) world_size = -1, ++implausible_[p];
    world = std::max(world, world_size);
  }
  for (const Communicator& c : run_.comms) world = std::max(world, c.size);
  run_.world_size = world;
  dropImplausibleRanks();
  for (size_t p = 0; p < run_.processes.size(); ++p) {
    int& rank = run_.processes[p].rank;
    if (rank < 0) rank = rank_from_comm_info_[p];
    for (const Place& place : places_[p].all()) {
      if (rank < 0 && run_.comms[place.comm].size == world) rank = place.rank;
    }
  }
}

// A global rank past any job (a damaged or hostile record: 2^31-1 overflowed the matrix's
// size) is not believed: unknown, and said so. One past every communicator of the run is:
// the files read may be a few ranks of a larger job.
void OpJoiner::dropImplausibleRanks() {
  const auto believed = [&](int& rank, size_t process) {
    if (rank < kMaxRanks) return;
    rank = -1;
    ++implausible_[process];
  };
  for (size_t p = 0; p < run_.processes.size(); ++p) believed(run_.processes[p].rank, p);
  for (Communicator& comm : run_.comms)
    for (size_t r = 0; r < comm.global_ranks.size(); ++r)
      if (comm.processes[r] >= 0) believed(comm.global_ranks[r], static_cast<size_t>(comm.processes[r]));
}

// A process whose comm info for a communicator was lost (damaged chunk) can still be
// seated when every other seat is taken: the one left open is its own.
bool OpJoiner::seatInOnlyOpenSeat(int process, uint64_t comm_id) {
  const auto it = comm_index_.find({identity_[static_cast<size_t>(process)].restart_count, comm_id});
  if (it == comm_index_.end()) return false;
  Communicator& comm = run_.comms[it->second];
  if (std::count(comm.processes.begin(), comm.processes.end(), -1) != 1) return false;
  const auto seat = std::find(comm.processes.begin(), comm.processes.end(), -1);
  *seat = process;
  places_[static_cast<size_t>(process)].add({comm_id, it->second, static_cast<int32_t>(seat - comm.processes.begin())});
  return true;
}

// Records that came before their process's comm info, or whose comm info was lost.
void OpJoiner::placeWaiting() {
  const auto seated = [&](int process, uint64_t comm_id) {
    return placeOf(process, comm_id) != nullptr || seatInOnlyOpenSeat(process, comm_id);
  };
  for (const CollRow& row : waiting_colls_) {
    if (!seated(row.view.process, row.comm_id) || !addColl(row)) ++unplaced_[static_cast<size_t>(row.view.process)];
  }
  for (const P2pRow& row : waiting_p2ps_) {
    if (!seated(row.view.process, row.comm_id) || !addP2p(row)) ++unplaced_[static_cast<size_t>(row.view.process)];
  }
  waiting_colls_ = {};
  waiting_p2ps_ = {};
}


// Ranks below the world size that no file names. Left empty when no file knows its rank:
// then which ranks are missing cannot be told.
void OpJoiner::findMissingRanks() {
  std::set<int> present;
  for (const ProcessInfo& p : run_.processes) {
    if (p.rank >= 0) present.insert(p.rank);
  }
  run_.missing_ranks.clear();
  if (present.empty()) return;
  for (int r = 0; r < run_.world_size; ++r) {
    if (!present.contains(r)) run_.missing_ranks.push_back(r);
  }
}

void OpJoiner::noteUnplaced() {
  for (size_t p = 0; p < run_.processes.size(); ++p) {
    ProcessInfo& info = run_.processes[p];
    if (unplaced_[p] > 0) {
      info.issues.push_back("commtrace: " + info.path + ": " + std::to_string(unplaced_[p]) +
                            " op records left out: no comm-info record places this rank (or its peer) in their communicator");
    }
    if (implausible_[p] > 0) {
      info.issues.push_back("commtrace: " + info.path + ": " + std::to_string(implausible_[p]) +
                            " ranks or communicator sizes past any job (" + std::to_string(kMaxRanks) +
                            " ranks) are not believed: read as unknown");
    }
    if (duplicates_[p] > 0) {
      info.issues.push_back("commtrace: " + info.path + ": " + std::to_string(duplicates_[p]) +
                            " op records repeat one already read for the same rank and instance; the first was kept");
    }
  }
}

}  // namespace commtrace::report
