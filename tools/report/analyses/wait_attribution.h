// Root causes of wait states (docs/report.md, "Root causes"; the method of Böhme et al.,
// ACM TOPC 3(2), 2016, as shared/reference/root-cause.md maps it onto NCCL).
//
// A member's wait at a synchronization (a collective, or a send/receive pair) is caused by
// the member(s) that arrived last. A last arriver's lateness is split in two: the part its
// GPU gap before the op exceeds its peers' (a delay it *created*: compute, host, input) and
// the rest, *inherited* from the op it left late before (because it waited there, the wait
// passes back along that chain). Every member leaves a synchronization when the last
// arrives, so each carries the last arriver's blame into its next op. The wait is charged
// to the origins of that blame: the seats where the delays were created.
//
// Instances come from the joiner in about time order, not in each rank's program order, so
// one whose member's previous op (the op its gap is measured from: a process's first op has
// none) has not been attributed yet waits for it; what waits is bounded, and a wait that
// outlives it (the previous op never joined), or the stream's end, proceeds with the blame
// known.
//
// The same walk replays the run without a candidate culprit's created delays (its gaps set
// to its peers' typical gap: each member arrives that much earlier, all leave at the last
// virtual arrival), which says what fixing it would save: the step time a user gains, not
// the others' summed waiting (ImpactReplay).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "tools/report/analyses/lateness.h"
#include "tools/report/load/run_model.h"
#include "tools/report/load/storage_pool.h"

namespace commtrace::report {

// The NVTX paths a synchronization's members issued it under: a collective's one
// (CollInstance::path), a transfer's send and receive (P2pTransfer::send_path, recv_path);
// 0: none.
struct SyncPaths {
  std::array<NameId, 2> paths{};
  NameId of(size_t member, bool transfer) const { return paths[transfer && member < paths.size() ? member : 0]; }
};

// Where a delay was created: a member's seat in a communicator (index as joined) and its process.
struct DelayOrigin {
  uint32_t comm = 0;
  int32_t comm_rank = -1;
  int32_t process = -1;
  bool operator==(const DelayOrigin&) const = default;
};


// Why a rank left an op when it did: up to kParts origins and their shares (summing to 1),
// or nothing known. Small shares are folded into the larger ones. Each origin also carries
// the NVTX path of the op its delay was created before (CollInstance::path); where a seat
// created delays before ops of several paths, that of the latest addition that outweighed
// all before it together (the bulk of its share).
class Blame {
 public:
  static constexpr size_t kParts = 4;
  struct Part {
    DelayOrigin origin;
    float share = 0;
    NameId path = 0;
  };
  // Adds weight * other (or weight to one origin); normalize() once after the adds.
  void add(const Blame& other, double weight);
  void add(const DelayOrigin& origin, double weight, NameId path);
  void normalize();
  std::span<const Part> parts() const { return {parts_.data(), size_}; }
  bool empty() const { return size_ == 0; }

 private:
  std::array<Part, kParts + 1> parts_{};  // one spare while adding
  uint8_t size_ = 0;
};

// One member of a synchronization, as the attribution reads it.
struct SyncMember {
  int32_t comm_rank = -1;
  int32_t process = -1;
  uint64_t gpu_start_ns = 0;
  uint64_t gpu_end_ns = 0;
  uint64_t gap_ns = MemberView::kNoGap;  // MemberView::gpu_gap_ns
  uint64_t cpu_start_ns = 0;             // when the CPU enqueued it (0: not recorded)
  double arrival_ns = 0;     // after the first member's arrival (from durations: no clocks compared)
  double wait_ns = 0;        // its wait in the op
  double last_share = 0;     // 1/k for each of the k members tied for last, else 0
  double peer_gap_ns = -1;   // its peers' typical gap before this op; < 0 unknown
  uint32_t role = 0;         // a send's or receive's role (RoleGaps::Id): its peers' gap is read when it is attributed,
                             // for the one that came later and for a replayed process (the others' stays unknown)
  // A collective's seat in sibling communicators (the same size, op and bytes: the same
  // tensor-parallel rank on another host), for a communicator inside one host, and the
  // typical gap of the others in that seat: the reference a host replayed whole has there,
  // where each of its peers is as slow.
  uint32_t sibling_role = 0;
  double sibling_gap_ns = -1;
};

// Another process's latest op in a send's or receive's role: a peer to hold its gap against.
struct RolePeer {
  int32_t process = -1;
  uint64_t gpu_start_ns = 0;
  uint64_t gap_ns = 0;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(process, gpu_start_ns, gap_ns);
  }
};

// What one synchronization cost and where that was created.
struct Attributed {
  uint32_t comm = 0;
  std::span<const SyncMember> members;
  std::span<const double> created;  // per member: the share of the instance's lateness it created (sums to <= 1)
  // Per member: its share of being last (1/k of k tied) where it created some of the delay,
  // else 0: what the live alerts count against chance in a window of a few dozen steps (a
  // rank whose gap explains 40 % of its lateness every time is last by its own delay every
  // time, not 0.4 times). The report sums `created` over the whole run instead: counted so,
  // its stretch test named healthy pipeline stages last by a hair.
  double lastCreating(size_t member) const { return created[member] > 0 ? members[member].last_share : 0.0; }
  struct Charge {
    DelayOrigin origin;
    double wait_ns = 0;
    bool direct = false;  // created at this very op (short-term), not passed back (long-term)
    NameId path = 0;      // the NVTX path of the op the delay was created before (Blame::Part::path)
  };
  // The members' waiting by where it was created: the instance's total, less what no delay
  // explains (the job's shape: a pipeline's bubble, a rank with less work before the op).
  std::span<const Charge> charges;
  uint64_t total_wait_ns = 0;
  uint64_t tag = 0;       // what the caller handed add() with it
  bool transfer = false;  // a send and its receive (their peers' gaps are their roles': RoleGaps)
  // A transfer's, per member (empty but for the one that came later): the other processes'
  // latest ops in its role. None for a collective.
  std::span<const std::vector<RolePeer>> role_peers;
  SyncPaths paths;
  NameId pathOf(size_t member) const { return paths.of(member, transfer); }
};

// What fixing a candidate would save: the run replayed with its created delays removed.
struct ImpactEstimate {
  std::vector<int32_t> processes;  // the candidate (one rank's, or a host's)
  double saved_share = 0;          // of the elapsed time, median over the processes replayed
  uint64_t syncs = 0;              // synchronizations replayed since it became a candidate
  template <class Archive>
  void serialize(Archive& ar) {
    ar(processes, saved_share, syncs);
  }
};

// Its peers' typical gap before a send or receive, whose two sides do different work (the
// sender computed what it sends): the median of the latest gaps before ops of the same role
// on every rank, a role being the side, the bytes, the communicator's size and both ends'
// places in it, over the other ranks that play it. The latest kKept of each of up to
// kPlayers processes are kept, so a burst of one process's ops (its file read in one chunk)
// does not push the others' out. The same stage of another data-parallel
// copy of a pipeline plays it (its communicator a sibling of the same size); a pipeline
// without copies has only its own past to go by.
class RoleGaps {
 public:
  static constexpr size_t kKept = 4;
  static constexpr size_t kPlayers = 16;
  struct Role {
    bool send = false;
    uint64_t bytes = 0;
    int comm_size = 0;
    int32_t comm_rank = -1, peer = -1;
  };
  static uint64_t keyOf(const Role& role);
  // A role as held here, from its key (interned: one lookup per member, then indexing); 0 is none.
  using Id = uint32_t;
  Id idOf(uint64_t key);
  // Adds the process's gap in the role (kNoGap: none) before its op that started then.
  void note(Id role, int32_t process, uint64_t gpu_start_ns, uint64_t gap_ns);
  // How often the process has played the role while no other has; none once another has.
  std::optional<uint64_t> soloPlays(Id role, int32_t process) const;
  // Only the latest gaps, for typicalNs: a collective's seat in sibling communicators.
  void noteLatest(Id role, int32_t process, uint64_t gpu_start_ns, uint64_t gap_ns);
  // The other processes' latest ops in the role.
  void peersOf(Id role, int32_t process, std::vector<RolePeer>& out) const;
  // The median of the latest gaps of the others in the role (of its own, when no other plays
  // it and `own_past`), -1 without one.
  double typicalNs(Id role, int32_t process, bool own_past = true);

  // Every gap a process had in a role, summed: what says, whatever order the ops came in,
  // whether its gaps are longer than the others' in the role (the typical gap above follows
  // the order: the others' may not have come yet).
  struct Sums {
    double n = 0, sum_us = 0, sq_us = 0;
    void add(double us) { ++n, sum_us += us, sq_us += us * us; }
    void merge(const Sums& o) { n += o.n, sum_us += o.sum_us, sq_us += o.sq_us; }
    template <class Archive>
    void serialize(Archive& ar) {
      ar(n, sum_us, sq_us);
    }
  };
  using ProcessSums = std::unordered_map<uint64_t, std::unordered_map<int32_t, Sums>>;  // role key -> process -> its gaps
  ProcessSums sums() const;  // built at each call (a copy of every role's sums): once, at the end
  // Per process, its gaps' excess over the median of the other processes' mean gap in each of
  // its roles (none where it plays a role alone), summed over its roles.
  static std::unordered_map<int32_t, Sums> excessByProcess(const ProcessSums& sums);
  static void merge(ProcessSums& into, const ProcessSums& other);

 private:
  struct Player {
    int32_t process = -1;
    std::array<uint64_t, kKept> gaps{};
    std::array<uint64_t, kKept> starts{};  // the GPU start of the op each gap came before
    uint64_t plays = 0;                    // gaps noted, all of them
    uint8_t next = 0, size = 0;
  };
  struct Latest {
    // Grown as they come: a role of one send pair on a world communicator has one player,
    // and a 16,384-rank run's roles held 97 MB as full arrays of kPlayers, under 10 MB grown.
    std::vector<Player> players;
    size_t replaced = 0;  // beyond kPlayers, players are replaced in turn
  };
  struct Entry {
    uint64_t key = 0;
    Latest latest;
    std::unordered_map<int32_t, Sums> sums;  // per process: every gap it had in the role
  };
  Entry& roleOf(Id id) { return roles_[id - 1]; }
  const Entry& roleOf(Id id) const { return roles_[id - 1]; }
  std::unordered_map<uint64_t, Id> ids_;
  std::vector<Entry> roles_;  // by id - 1
  std::vector<double> scratch_;
};

class WaitAttribution {
 public:
  // At most this many members of waiting instances (88 bytes each), and at most kPatience
  // later ops of the awaited process before a wait is given up: a file of one chunk (a short
  // run, ended before its first flush) is joined whole before the next file's records come.
  // A send or receive also waits until another rank has played its role (RoleGaps), for its
  // peers' gap, while its rank has played it at most kRoleWait times: a role no other rank
  // plays (a pipeline without copies, a pair of ranks of its own) goes by its own past.
  // In a run of more than 2,048 processes, kPendingMembersPerProcess a process: at 16,384
  // ranks ~130,000 small instances wait at once, and the cap of 1 M attributed the oldest
  // early, which put a planted straggler's cost at 310 us a step instead of 1.1 ms.
  static constexpr size_t kMaxPendingMembers = 1 << 20;
  static constexpr size_t kPendingMembersPerProcess = 512;
  static constexpr uint64_t kPatience = 1 << 14;
  // The run's width, which sizes the cap above (JoinedOpSink::runWidth).
  void runWidth(size_t processes) { max_pending_members_ = std::max(max_pending_members_, kPendingMembersPerProcess * processes); }
  size_t maxPendingMembers() const { return max_pending_members_; }
  static constexpr double kRoleWait = 4;
  static constexpr size_t kLedger = 16;        // ops remembered per process
  static constexpr size_t kMaxCandidates = 8;  // replays at once
  using OnAttributed = std::function<void(const Attributed&)>;

  explicit WaitAttribution(OnAttributed on_attributed) : on_attributed_(std::move(on_attributed)) {}

  // A joined op: a collective that synchronizes, or a plain send and its receive (the one
  // that came later made the other wait: NCCL's send waits for the receiver's buffer, the
  // receive for the data), is attributed; other ops (and the pieces of AlltoAll, Gather and
  // Scatter, one call each) only pass each member's blame on. `tag` comes back with it.
  void addCollective(const CollInstance& instance, std::span<const MemberView> members, uint64_t tag = 0);
  void addTransfer(const P2pTransfer& transfer, uint64_t tag = 0);
  // The same from members as arrivalsOf and the views give them (synchronizing false: an op
  // that only passes each member's blame on); paths as Pending's.
  void add(uint32_t comm, bool synchronizing, std::span<const SyncMember> members, uint64_t total_wait_ns, uint64_t tag = 0,
           bool transfer = false, std::array<NameId, 2> paths = {});
  // Proceeds with everything still waiting, or with what was added with a tag below `tag`.
  void flush();
  void flushBefore(uint64_t tag);
  // After flush(), once no op will come: frees what only ops still to come would read (each
  // process's ledger of its latest ops, the slots instances waited in: 34 MB at 16,384
  // ranks, held through the rest of the report). The figures stay readable.
  void releaseWalk();

  // Becomes a copy of another's state (what it holds, waits for and replays), its own
  // callback kept: a snapshot that proceeds with what still waits without stopping `other`.
  void copyStateFrom(const WaitAttribution& other);

  // Adds a candidate culprit to replay from now on (ignored when already one, or when
  // kMaxCandidates are replayed).
  void addCandidate(std::vector<int32_t> processes);
  std::vector<ImpactEstimate> impacts() const;
  // The run whose processes' hosts say which communicators lie inside one host (their
  // members' seats in sibling communicators are then noted).
  void knowHosts(const RunModel& run) { run_ = &run; }
  const RoleGaps& roleGaps() const { return role_gaps_; }
  // Entries the queues of waiting instances hold (in arrival order, and per awaited process):
  // what stays bounded by what waits, however long the run.
  size_t queued() const;

 private:
  static constexpr size_t kMinCompaction = 64;  // the size below which a queue of waiting instances is never compacted
  // A process's last kLedger ops: why each was left when it was (a mix of origins) and how
  // much later than its own work alone, all ops before it counted. The GPU spans lie apart
  // from the rest, so the searches read 256 contiguous bytes.
  struct Ledger {
    std::array<uint64_t, kLedger> starts{}, ends{};
    std::array<Blame, kLedger> blames{};
    std::array<double, kLedger> held_ns{};
    size_t next = 0, size = 0;
    // While every op held started and ended after the one pushed before it (one stream, the
    // usual case), the op before a start is the newest that started earlier.
    uint64_t pushes = 0, disordered_until = 0;
    std::optional<size_t> before(uint64_t start) const;
    bool has(uint64_t start, uint64_t gap) const;
    void push(uint64_t start, uint64_t end, const Blame& blame, double held);
  };
  struct Pending {
    uint32_t comm = 0;
    bool synchronizing = false;
    uint64_t total_wait_ns = 0;
    uint64_t tag = 0;
    std::vector<SyncMember> members;
    bool transfer = false;
    size_t ready_members = 0;  // the members before this one no longer wait (a communicator of 1,024 is not rescanned per wake)
    bool peers_are_the_others = false;  // each member's peer_gap_ns is the median of the other members' gaps
    int32_t blocked_on = -1;  // the process whose blocked_ queue holds it: once, however often it waits there again
    SyncPaths paths;
    NameId pathOf(size_t member) const { return paths.of(member, transfer); }
  };
  // Waiting instances live in reusable slots (a small one keeps its members' storage): a
  // handle is a slot and its generation, so one that has proceeded is told from the slot's
  // next tenant without a lookup table.
  using Handle = uint64_t;
  struct Slot {
    Pending pending;
    uint32_t generation = 0;
    bool live = false;
  };
  // What waits for a process's op: the one its member's gap before `start` is measured from.
  struct Waiter {
    uint64_t start = 0, gap = 0;
    Handle handle = 0;
  };
  // A process's waiters. Few, they are scanned whole per op of the process; past kFew,
  // they are filed by the op each waits for: a gap before `start` is measured from the op
  // that ended at start - gap (for a gap of 0, one still running at start), so an op
  // [start, end] wakes those filed in [start, end]. (Scanning all per op was most of a
  // report of 4 ranks x 400,000 ops: thousands wait at once, 20x the time of the report
  // before the walk; filing every one cost the 1,024-rank run, whose processes have a few.)
  class ProcessWaiters {
   public:
    void add(const Waiter& waiter);
    // Appends to `woken` the handles of those measured from the op, in the order they came.
    void wake(uint64_t op_start, uint64_t op_end, std::vector<Handle>& woken);
    // Drops those `gone` says have proceeded without their op, once the waiters have
    // doubled since the last time.
    template <class Gone>
    void compactWhenDoubled(Gone gone);

   private:
    static constexpr size_t kFew = 64;
    struct Filed {
      uint64_t order = 0;  // when it came
      Waiter waiter;
    };
    static uint64_t keyOf(const Waiter& w) { return w.gap == 0 ? w.start : w.start - w.gap; }
    // One of the two holds them all: few_ while by_key_ is empty, by_key_ from the kFew + 1st on.
    std::vector<Filed> few_;                 // while no more than kFew wait: in the order they came
    // Bounds of the keys in few_ (as keyOf; loose once compacted): an op of the process wakes
    // only waiters keyed at its end or inside it, so an op outside them reads no more (a waiter
    // waits for an op not seen yet, mostly later than the one seen: at 16,384 ranks each
    // member of a world instance scanned its process's few waiters for nothing).
    uint64_t few_lowest_ = UINT64_MAX, few_highest_ = 0;
    void bound(const Waiter& w) { few_lowest_ = std::min(few_lowest_, keyOf(w)), few_highest_ = std::max(few_highest_, keyOf(w)); }
    void unbound() { few_lowest_ = UINT64_MAX, few_highest_ = 0; }
    std::multimap<uint64_t, Filed> by_key_;  // past that: by the end (gap 0: the start) of the op each waits for
    std::vector<Filed> woken_;               // scratch: one op's, put back in the order they came
    uint64_t added_ = 0;
    size_t limit_ = kMinCompaction;
  };
  // The candidates replayed side by side: a process's figures for every candidate lie in one
  // record, so a member's sync reads one place (a pass per candidate read eight).
  struct Replays {
    struct Candidate {
      std::vector<int32_t> processes;  // sorted (more than one: a group, whose delays sibling seats also measure)
      uint64_t syncs = 0;
    };
    struct Process {
      std::array<double, kMaxCandidates> advance{};           // per candidate: how much earlier it would be
      std::array<uint64_t, kMaxCandidates> first{}, last{};   // per candidate: GPU start and end seen since (0: none)
      uint8_t mask = 0;                                        // bit r set where it is candidate r's
    };
    std::vector<Candidate> candidates;
    std::vector<Process> processes;  // per process
    Process& of(int32_t process);
    uint8_t maskOf(int32_t process) const;
    void sync(bool synchronizing, std::span<const SyncMember> members);
  };

  struct LatenessSplit {  // shares of the lateness (the rest: the job's shape, charged to nobody)
    double created = 0;
    double inherited = 0;
  };
  bool withinOneHost(std::span<const SyncMember> members) const;
  void noteSiblingSeats(const CollInstance& c, std::vector<SyncMember>& members);
  static LatenessSplit splitLateness(const SyncMember& last, double lateness, double waiter_gap, double held_more);
  Ledger& ledgerOf(int32_t process);
  // Fetches into cache what Ledger::has and Ledger::before read of a process's ledger, a few
  // members ahead of the one read: a world instance's members each read another ledger (2 KB
  // each, 34 MB at 16,384 ranks), and most were not cached.
  void prefetchLedger(std::span<const SyncMember> members, size_t i) const;
  static constexpr size_t kLedgersAhead = 4;
  // What a pending instance waits for: the process of its first member not ready, and either
  // that member's previous op (the one its gap before its GPU start is measured from) or, for
  // a role's peers, the role.
  struct Wait {
    int32_t process = -1;
    uint64_t start = 0, gap = 0;
    RoleGaps::Id role = 0;  // 0: the process's op
  };
  std::optional<Wait> blocking(Pending& p);
  void dropSettledFront();
  template <class Queue, class Settled>
  static void compactWhenDoubled(Queue& queue, size_t& limit, Settled settled);
  bool isCandidate(std::span<const int32_t> processes) const;
  void drain();
  Handle store(Pending& p);
  Pending* find(Handle handle);
  void release(Handle handle);
  void wait(Handle handle, const Wait& wait);
  void wake(const SyncMember& attributed);
  void force(Handle handle);
  void forceInProgramOrder(const std::function<bool(const Pending&)>& due);
  class ProgramOrder {
   public:
    ProgramOrder(WaitAttribution& owner, const std::function<bool(const Pending&)>& due);
    std::vector<size_t> processesOf(Handle handle) const;  // distinct, of a live op
    void settle(size_t process);
    bool settleFronts();  // whether some op is then the earliest everywhere
    std::optional<Handle> nextReady();

   private:
    WaitAttribution& owner_;
    std::vector<std::vector<std::pair<uint64_t, Handle>>> waiting_;  // per process: (GPU start, op), due ones
    std::vector<size_t> next_;                                       // per process: its front in waiting_
    std::vector<size_t> counted_;     // per process: its front counted (index + 1; 0 none)
    std::vector<uint32_t> fronts_;    // per slot: the processes whose front its op is
    std::vector<uint32_t> processes_;  // per slot: its op's processes
    std::vector<Handle> ready_;       // the earliest of every process in it
  };
  void expirePatience(int32_t process);
  static constexpr uint64_t kNeverDue = UINT64_MAX;
  void refreshPatience(size_t process);  // patience_due_ from blocked_'s front
  void submit(Pending header);
  void process(Pending& p);
  double waiterGap(const Pending& p);
  static double middleOf(std::vector<double>& values);

  OnAttributed on_attributed_;
  std::vector<Ledger> ledgers_;  // per process
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_slots_;
  std::deque<Handle> pending_order_;  // in arrival order (those that have proceeded skipped)
  size_t pending_members_ = 0;
  size_t max_pending_members_ = kMaxPendingMembers;
  std::vector<ProcessWaiters> waiters_;                           // per process
  std::unordered_map<RoleGaps::Id, std::vector<Handle>> role_waiters_;  // per role: what waits for its peers
  std::vector<Handle> ready_;                                     // to try now
  std::vector<uint64_t> arrived_;                                 // per process: its ops added so far
  std::vector<std::deque<std::pair<Handle, uint64_t>>> blocked_;  // per process: (what waits, its arrivals then)
  std::vector<size_t> blocked_limits_;                            // per process: its size that compacts it
  std::vector<uint64_t> patience_due_;                            // per process: its arrivals when blocked_'s front gives up
  size_t pending_order_limit_ = kMinCompaction;
  Replays replays_;
  const RunModel* run_ = nullptr;  // the processes' hosts, once known
  // Per communicator inside one host: its seats' roles in sibling communicators, for the
  // bytes and op it had last (an interned key per member was a hash lookup each).
  struct SiblingSeats {
    uint64_t bytes = 0;
    NameId func = 0;
    std::vector<RoleGaps::Id> roles;  // per comm rank; 0: not yet interned
  };
  std::vector<SiblingSeats> sibling_seats_;
  RoleGaps role_gaps_;
  // Scratch, reused from instance to instance.
  Pending scratch_pending_;
  StoragePool<SyncMember> member_storage_;  // of released instances, for those built next
  InstanceArrivals arrivals_;
  std::vector<SyncMember> members_;
  std::vector<double> created_;
  std::vector<double> gaps_;
  std::vector<uint64_t> member_gaps_;
  std::vector<int32_t> processes_;  // of the instance being added
  std::vector<double> held_;         // per member: its held time before the op
  std::vector<double> waiter_held_;
  std::vector<Attributed::Charge> charges_;
  std::vector<std::vector<RolePeer>> role_peers_;
  std::vector<Blame> carries_;
};

}  // namespace commtrace::report
