// Live hang alerts (`commtrace watch`; the job's collector, later). A hung op never completes,
// so its record never comes: each process's flusher reports, once a second, the oldest op it
// has had in flight for a second or more on each communicator (InFlightRecord) and clears the
// report once nothing is stuck there. A communicator hangs when a member has waited in an op
// for hang_after: the alert names the op, the members waiting in it, and where every other
// member was last seen (the last op it completed there, or the other op it is stuck in, and
// for how long its file has been silent: a process that died or froze writes nothing, while
// a live one writes a heartbeat every second). It has RECOVERED once no member waits in that
// op any more. Ages are the watcher's clock minus the members' (UTC) start times: across
// hosts they are off by the clocks' offsets, milliseconds against seconds of waiting.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "tools/report/load/process_reader.h"
#include "tools/report/load/run_model.h"

namespace commtrace::report {

// An op as a hang alert names it: a collective by its func and NCCL seqNumber, a send or
// receive by its func, per-peer index and peer.
struct HungOp {
  NameId func = 0;
  uint64_t seq = 0;
  uint64_t op_index = 0;
  int32_t peer = -1;  // -1: a collective
  bool operator==(const HungOp&) const = default;
};

struct HangAlert {
  enum class Kind : uint8_t { kHang, kRecovered };
  struct Member {
    int32_t process = -1;  // -1: no file has shown this comm rank yet
    int comm_rank = -1;
    std::optional<HungOp> last;  // the last op it completed on the communicator, or the one it is stuck in
    bool stuck = false;          // `last` is still in flight
    double silent_s = 0;         // since its file last grew (a heartbeat a second while the process lives)
  };
  Kind kind = Kind::kHang;
  uint64_t comm_id = 0;
  NameId comm_name = 0;
  int comm_size = 0;
  HungOp op;                  // the op the waiting members are in
  uint64_t since_utc_ns = 0;  // the first waiting member's start of it
  double waited_s = 0;        // since then, until the alert (recovered: until it was seen to end)
  std::vector<Member> waiting, others;  // others: the members not waiting in it (a send's: its peer)
};

class LiveHangs {
 public:
  struct Options {
    uint64_t hang_after_ns = 5'000'000'000;
    uint64_t silent_after_ns = 3'000'000'000;  // a file without a heartbeat this long is silent
  };
  using OnAlert = std::function<void(const HangAlert&)>;

  LiveHangs(const RunModel& run, Options options, OnAlert on_alert);

  // Every batch a file gives, as it is read.
  void observe(const RecordBatch& batch);
  // Judges every communicator as of now (the watcher's CLOCK_REALTIME).
  void advance(uint64_t now_utc_ns);
  // The hangs alerted and not yet recovered, as last judged.
  std::vector<HangAlert> hanging() const;

 private:
  struct Seen {
    HungOp op;
    uint64_t start_utc_ns = 0;
  };
  struct MemberState {
    int32_t process = -1;
    std::optional<Seen> done;   // the latest op it completed (latest start)
    std::optional<Seen> stuck;  // its flusher's current report
  };
  struct CommState {
    NameId name = 0;
    int size = 0;
    std::map<int, MemberState> members;  // by comm rank
    std::optional<HangAlert> alert;      // raised, not yet recovered
    std::vector<int32_t> roots;          // the processes its alert names as where the wait starts
    // A member has reported an op in flight since the last judgment found nobody stuck:
    // without one (nearly always) there is nothing to judge, and a 1,024-member
    // communicator is not walked twice a second for nothing.
    bool maybe_stuck = false;
  };
  struct ProcessState {
    uint64_t heartbeat_utc_ns = 0;
    bool closed = false;
    // Its seat in each of its communicators (a process is in a few; std::map nodes stay put).
    std::vector<std::pair<uint64_t, MemberState*>> seats;
  };

  struct Candidate {  // a communicator's longest wait, past hang_after, not yet alerted
    uint64_t comm_id = 0;
    HungOp op;
    int waiting = 0;
  };
  struct Roots {
    std::vector<int32_t> processes;
    bool knock_on = false;
  };

  MemberState* memberOf(int32_t process, uint64_t comm_id);
  void noteDone(int32_t process, uint64_t comm_id, const HungOp& op, uint64_t start_utc_ns);
  std::optional<Candidate> judge(uint64_t comm_id, CommState& comm, uint64_t now_utc_ns);
  Roots rootsOf(uint64_t comm_id, const CommState& comm, const HungOp& op) const;
  bool stuckElsewhere(int32_t process, uint64_t comm_id) const;
  HangAlert describe(uint64_t comm_id, const CommState& comm, const HungOp& op, uint64_t now_utc_ns) const;
  static bool contradictsItself(const HangAlert& a);
  bool isStuck(const MemberState& m) const;

  const RunModel& run_;
  Options options_;
  OnAlert on_alert_;
  const NameId send_, recv_;  // NCCL's names are in every run's pool from the start
  std::unordered_map<uint64_t, CommState> comms_;
  std::vector<ProcessState> processes_;
};

}  // namespace commtrace::report
