// Live straggler alerts (`commtrace watch`, the job's collector): the synchronizations are
// attributed as they are joined (wait_attribution.h, the report's engine: a wait is charged
// to the seat whose delay created it, passed back through the ranks that only inherited
// it) and binned into windows of their time (the first member's CPU start, as UTC); each
// window, once every file has passed its end, judges every seat of every communicator: how
// often it was last and created some of the delay (Attributed::lastCreating) at least min_z
// standard deviations above chance of being last, and the waiting its delays caused at least kJudgedShare of min_effect of the other
// members' time. A rank min_effect slower per step makes each of the others wait about that
// share of the step, half the windows a little more and half a little less; judged at 80 %
// of it, it is named in every window, while a healthy rank's share stays far below (its
// delays are the jitter), and a tensor-parallel peer that only passes the slow rank's
// lateness on to its data-parallel pair creates none. A seat judged so in `persist` windows
// in a row is a STRAGGLER from the first of them; it has RECOVERED after `persist` windows in
// a row of that communicator without. One noisy window alerts nobody.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <vector>

#include "tools/report/analyses/lateness.h"
#include "tools/report/analyses/stragglers_rows.h"
#include "tools/report/analyses/wait_attribution.h"
#include "tools/report/load/op_joiner.h"
#include "tools/report/load/run_model.h"

namespace commtrace::report {

struct LiveAlert {
  enum class Kind : uint8_t { kStraggler, kRecovered };
  Kind kind = Kind::kStraggler;
  uint32_t comm = 0;       // index into RunModel::comms, as joined
  int comm_rank = -1;
  int32_t process = -1;    // index into RunModel::processes
  NameId func = 0;         // the communicator's most frequent func in the deciding window
  uint64_t since_utc_ns = 0;  // the start of the first window it was judged a straggler in (recovered: the first without)
  // The deciding window's figures (a recovery's: its last straggling window's).
  double late_share = 0;        // of the communicator's instances in it, where the rank was last
  double lateness_us = 0;       // its mean lateness where it was last: how much later than the first arriver
  double effect = 0;            // the waiting it caused over the other members' time
  double confidence = 0;        // 0..1, as the report's straggler confidence
  // Why it was late, from the GPU gaps before the ops it was last at (classFromGaps): the
  // digests carry no kernel records, so a longer gap reads "compute", host delay not ruled out.
  std::string cls = "unknown";
  double class_certainty = 0;
  StragglerBasis basis = StragglerBasis::kNone;
  double gap_excess_us = 0;  // its mean gap before them over its peers' median gap, where measured
};

// What the stream has shown so far, for live metrics (counters since the start).
struct LiveTotals {
  struct Rank {
    double last_arrivals = 0;     // instances it was last at (a tie shared): the symptom
    uint64_t wait_caused_ns = 0;  // the others' waiting its own delays caused (the root cause)
  };
  struct CommFunc {
    uint64_t instances = 0;
    double bus_bytes = 0;      // nccl-tests bus bytes of the timed instances
    uint64_t transfer_ns = 0;  // their transfer times (the last arriver's duration)
  };
  // What busBw is broken down by: few values each, so the metrics' labels stay bounded.
  struct OpClass {
    uint32_t comm = 0;
    NameId func = 0;
    int size_class = 0;  // nccl::sizeClassOf()
    NameId algo = 0, proto = 0;
    auto operator<=>(const OpClass&) const = default;
  };
  std::map<int32_t, Rank> by_process;
  std::map<OpClass, CommFunc> by_op_class;
};

class LiveStragglers : public JoinedOpSink {
 public:
  struct Options {
    uint64_t window_ns = 1'000'000'000;
    double min_z = 4;
    double min_effect = 0.05;  // the per-step slowdown worth an alert
    int persist = 3;
  };
  static constexpr double kJudgedShare = 0.8;
  using OnAlert = std::function<void(const LiveAlert&)>;

  LiveStragglers(const RunModel& run, Options options, OnAlert on_alert);

  void collective(const CollInstance& instance, std::span<const MemberView> members) override;
  void transfer(const P2pTransfer& transfer) override;
  // Renumbers what it holds to the communicators' final order (the joiner sorts them).
  // Every file has been read up to watermark_utc_ns: judges the windows that end by then.
  void advance(uint64_t watermark_utc_ns);

  const LiveTotals& totals() const { return totals_; }
  // The members judged stragglers now: (comm, comm rank) -> their latest alert.
  std::map<std::pair<uint32_t, int>, LiveAlert> straggling() const;

 private:
  struct Seat {  // one member of one communicator within one window
    int32_t process = -1;
    uint64_t instances = 0;
    double last = 0, expected_last = 0, variance = 0;  // last arrivals and chance's mean and variance of them
    uint64_t wait_caused_ns = 0;
    uint64_t lateness_ns = 0;  // summed over the instances it was last at
    double gap_excess_us = 0;  // summed over those of them whose gaps were measured (its and its peers')
    uint64_t gaps_measured = 0;
  };
  struct CommWindow {
    int members = 0;
    std::vector<Seat> seats;  // by comm rank
    std::map<NameId, uint64_t> funcs;
    Seat& seat(int comm_rank) {
      if (seats.size() <= static_cast<size_t>(comm_rank)) seats.resize(static_cast<size_t>(comm_rank) + 1);
      return seats[static_cast<size_t>(comm_rank)];
    }
  };
  using Window = std::map<uint32_t, CommWindow>;  // by communicator
  struct Streak {  // one member of one communicator across windows
    int flagged = 0, clear = 0;  // windows in a row judged so, and not
    bool straggling = false;
    uint64_t since_utc_ns = 0;
    LiveAlert last_alert;
  };

  static constexpr uint64_t kUnplaced = UINT64_MAX;
  uint64_t windowOf(std::span<const MemberView> members) const;
  void tally(const Attributed& a);
  void judge(uint64_t window_start_utc_ns, const Window& window);
  void judgeSeat(uint32_t comm, int comm_rank, uint64_t window_start_utc_ns, const CommWindow& w);

  const RunModel& run_;
  Options options_;
  OnAlert on_alert_;
  WaitAttribution attribution_;
  std::map<uint64_t, Window> windows_;  // by window start (UTC ns), open until advance() passes their end
  uint64_t judged_until_utc_ns_ = 0;     // windows before this were judged: instances for them come too late
  std::map<std::pair<uint32_t, int>, Streak> streaks_;
  LiveTotals totals_;
};

}  // namespace commtrace::report
