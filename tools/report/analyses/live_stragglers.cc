#include "tools/report/analyses/live_stragglers.h"

#include <algorithm>

#include "core/nccl_vocab.h"
#include "tools/report/analyses/op_metrics.h"
#include "tools/report/analyses/straggler_class.h"
#include "tools/report/analyses/stragglers.h"
#include "tools/report/load/op_stream.h"

namespace commtrace::report {

LiveStragglers::LiveStragglers(const RunModel& run, Options options, OnAlert on_alert)
    : run_(run), options_(options), on_alert_(std::move(on_alert)), attribution_([this](const Attributed& a) { tally(a); }) {}

// The window an op falls in: its first member's CPU start, as UTC; kUnplaced without one.
uint64_t LiveStragglers::windowOf(std::span<const MemberView> members) const {
  uint64_t first_utc = UINT64_MAX;
  for (const MemberView& m : members)
    if (m.process >= 0 && m.cpu_start_ns != 0) first_utc = std::min(first_utc, run_.processes[static_cast<size_t>(m.process)].utcOfCpu(m.cpu_start_ns));
  return first_utc == UINT64_MAX ? kUnplaced : first_utc - first_utc % options_.window_ns;
}

void LiveStragglers::collective(const CollInstance& c, std::span<const MemberView> members) {
  const nccl::FuncInfo* func = NamePool::ncclFunc(c.func);
  LiveTotals::CommFunc& totals = totals_.by_op_class[{c.comm, c.func, nccl::sizeClassOf(c.bytes), c.algo, c.proto}];
  ++totals.instances;
  if (const uint64_t ns = transferNs(members); ns != 0 && c.bytes != 0) {
    const int n = static_cast<int>(members.size());
    totals.bus_bytes += static_cast<double>(ncclTestsBytes(func, c.bytes, n)) * busBwFactor(func, n);
    totals.transfer_ns += ns;
  }
  const uint64_t window = windowOf(members);
  if (window != kUnplaced && window >= judged_until_utc_ns_ && func != nullptr && func->synchronizing) ++windows_[window][c.comm].funcs[c.func];
  attribution_.addCollective(c, members, window);
}

void LiveStragglers::transfer(const P2pTransfer& t) {
  const MemberView sides[] = {t.send, t.recv};
  attribution_.addTransfer(t, windowOf(sides));
}

// A synchronization attributed (wait_attribution.h): the share of its lateness each member
// created goes to its seat, the waiting to the seats where the delays were created.
void LiveStragglers::tally(const Attributed& a) {
  const double p = 1.0 / static_cast<double>(a.members.size());
  for (const SyncMember& m : a.members)
    if (m.last_share > 0 && m.process >= 0) totals_.by_process[m.process].last_arrivals += m.last_share;
  for (const Attributed::Charge& c : a.charges)
    if (c.origin.process >= 0) totals_.by_process[c.origin.process].wait_caused_ns += static_cast<uint64_t>(c.wait_ns);
  if (a.tag == kUnplaced || a.tag < judged_until_utc_ns_) return;  // its window was judged already
  Window& window = windows_[a.tag];
  CommWindow& w = window[a.comm];
  w.members = std::max(w.members, static_cast<int>(a.members.size()));
  for (size_t i = 0; i < a.members.size(); ++i) {
    const SyncMember& m = a.members[i];
    Seat& s = w.seat(m.comm_rank);
    s.process = m.process;
    ++s.instances;
    s.last += a.lastCreating(i);
    s.expected_last += p;
    s.variance += p * (1 - p);
    if (a.created[i] == 0) continue;
    s.lateness_ns += static_cast<uint64_t>(m.arrival_ns * a.lastCreating(i));
    if (m.gap_ns == MemberView::kNoGap || m.peer_gap_ns < 0) continue;
    s.gap_excess_us += (static_cast<double>(m.gap_ns) - m.peer_gap_ns) / 1e3;
    ++s.gaps_measured;
  }
  for (const Attributed::Charge& c : a.charges) {
    Seat& s = window[c.origin.comm].seat(c.origin.comm_rank);
    s.process = c.origin.process;
    s.wait_caused_ns += static_cast<uint64_t>(c.wait_ns);
  }
}


std::map<std::pair<uint32_t, int>, LiveAlert> LiveStragglers::straggling() const {
  std::map<std::pair<uint32_t, int>, LiveAlert> out;
  for (const auto& [seat, streak] : streaks_)
    if (streak.straggling) out.emplace(seat, streak.last_alert);
  return out;
}

void LiveStragglers::advance(uint64_t watermark_utc_ns) {
  // What still waits for an earlier op is attributed with what is known before its window is judged.
  attribution_.flushBefore(watermark_utc_ns - watermark_utc_ns % options_.window_ns);
  while (!windows_.empty() && windows_.begin()->first + options_.window_ns <= watermark_utc_ns) {
    const auto window = windows_.begin();
    judge(window->first, window->second);
    judged_until_utc_ns_ = window->first + options_.window_ns;
    windows_.erase(window);
  }
}

void LiveStragglers::judge(uint64_t window_start_utc_ns, const Window& window) {
  for (const auto& [comm, w] : window)
    for (int r = 0; r < static_cast<int>(w.seats.size()); ++r)
      if (w.seats[static_cast<size_t>(r)].instances != 0 || w.seats[static_cast<size_t>(r)].wait_caused_ns != 0)
        judgeSeat(comm, r, window_start_utc_ns, w);
}

void LiveStragglers::judgeSeat(uint32_t comm, int comm_rank, uint64_t window_start_utc_ns, const CommWindow& w) {
  const Seat& s = w.seats[static_cast<size_t>(comm_rank)];
  const double z = lastArrivalZ(s.last, s.expected_last, s.variance);
  const double others = static_cast<double>(std::max(1, w.members - 1));
  const double effect = static_cast<double>(s.wait_caused_ns) / (others * static_cast<double>(options_.window_ns));
  const bool flagged = z >= options_.min_z && effect >= kJudgedShare * options_.min_effect;
  Streak& streak = streaks_[{comm, comm_rank}];
  if (flagged) {
    if (streak.flagged++ == 0) streak.since_utc_ns = window_start_utc_ns;
    streak.clear = 0;
    LiveAlert& a = streak.last_alert;
    a = {LiveAlert::Kind::kStraggler, comm, comm_rank, s.process, 0, streak.since_utc_ns,
         s.last / static_cast<double>(std::max<uint64_t>(s.instances, 1)), s.last > 0 ? static_cast<double>(s.lateness_ns) / s.last / 1e3 : 0.0, effect,
         confidenceOf(std::min(z / options_.min_z, effect / options_.min_effect))};
    if (!w.funcs.empty())
      a.func = std::max_element(w.funcs.begin(), w.funcs.end(), [](const auto& x, const auto& y) { return x.second < y.second; })->first;
    const bool measured = s.gaps_measured != 0;
    a.gap_excess_us = measured ? s.gap_excess_us / static_cast<double>(s.gaps_measured) : 0;
    // The gaps are those before the ops where it created a delay (the attribution has split off
    // what earlier ops passed on and the job's shape), so the excess is what there is to
    // explain, as the report's class reads it (straggler_class.cc): a pipeline stage late at its
    // sends by its own longer compute is compute, not "an earlier op".
    StragglerClass cls = classFromGaps(measured, a.gap_excess_us, a.gap_excess_us, /*ends_slow_link=*/false);
    a.cls = std::move(cls.cls);
    a.class_certainty = cls.certainty;
    a.basis = cls.basis;
    if (!streak.straggling && streak.flagged >= options_.persist) {
      streak.straggling = true;
      on_alert_(a);
    }
    return;
  }
  if (streak.clear++ == 0) streak.since_utc_ns = window_start_utc_ns;
  streak.flagged = 0;
  if (streak.straggling && streak.clear >= options_.persist) {
    streak.straggling = false;
    LiveAlert a = streak.last_alert;
    a.kind = LiveAlert::Kind::kRecovered;
    a.since_utc_ns = streak.since_utc_ns;
    on_alert_(a);
  }
}

}  // namespace commtrace::report
