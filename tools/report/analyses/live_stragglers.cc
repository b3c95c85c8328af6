#include "tools/report/analyses/live_stragglers.h"

#include <algorithm>

#include "core/nccl_vocab.h"
#include "tools/report/analyses/op_metrics.h"
#include "tools/report/analyses/straggler_class.h"
#include "tools/report/analyses/stragglers.h"
#include "tools/report/load/op_stream.h"

namespace commtrace::report {

LiveStragglers::LiveStragglers(const RunModel& run, Options options, OnAlert on_alert)
    : run_(run), options_(options), on_alert_(std::move(on_alert)) {}

void LiveStragglers::collective(const CollInstance& c, std::span<const MemberView> members) {
  const nccl::FuncInfo* func = NamePool::ncclFunc(c.func);
  LiveTotals::CommFunc& totals = totals_.by_op_class[{c.comm, c.func, nccl::sizeClassOf(c.bytes), c.algo, c.proto}];
  ++totals.instances;
  if (const uint64_t ns = transferNs(members); ns != 0 && c.bytes != 0) {
    const int n = static_cast<int>(members.size());
    totals.bus_bytes += static_cast<double>(ncclTestsBytes(func, c.bytes, n)) * busBwFactor(func, n);
    totals.transfer_ns += ns;
  }
  if (!arrivalsOf(func != nullptr && func->synchronizing, members, arrivals_)) return;
  for (const MemberArrival& a : arrivals_.members) {
    if (a.last_share == 0 || a.process < 0) continue;
    LiveTotals::Rank& r = totals_.by_process[a.process];
    r.last_arrivals += a.last_share;
    r.wait_caused_ns += static_cast<uint64_t>(static_cast<double>(arrivals_.total_wait_ns) * a.last_share);
  }
  uint64_t first_utc = UINT64_MAX;
  for (const MemberView& m : members)
    if (m.process >= 0 && m.cpu_start_ns != 0) first_utc = std::min(first_utc, run_.processes[static_cast<size_t>(m.process)].utcOfCpu(m.cpu_start_ns));
  if (first_utc == UINT64_MAX) return;
  const uint64_t start = first_utc - first_utc % options_.window_ns;
  if (start < judged_until_utc_ns_) return;  // its window was judged already
  CommWindow& w = windows_[start][c.comm];
  if (w.seats.size() < members.size()) w.seats.resize(members.size());
  w.members = static_cast<int>(members.size());
  ++w.funcs[c.func];
  const double p = 1.0 / static_cast<double>(arrivals_.members.size());
  const double peer_gap_us = peersMedianGapUs(arrivals_, members, peer_gaps_);
  for (const MemberArrival& a : arrivals_.members) {
    Seat& s = w.seats[static_cast<size_t>(a.comm_rank)];
    s.process = a.process;
    ++s.instances;
    s.last += a.last_share;
    s.expected_last += p;
    s.variance += p * (1 - p);
    if (a.last_share == 0) continue;
    s.wait_caused_ns += static_cast<uint64_t>(static_cast<double>(arrivals_.total_wait_ns) * a.last_share);
    s.lateness_ns += a.lateness_ns;
    const uint64_t gap = members[static_cast<size_t>(a.comm_rank)].gpu_gap_ns;
    if (gap == MemberView::kNoGap || peer_gap_us < 0) continue;
    s.gap_excess_us += static_cast<double>(gap) / 1e3 - peer_gap_us;
    ++s.gaps_measured;
  }
}

void LiveStragglers::finish(std::span<const uint32_t> new_index) {
  const auto first = [](auto& key) -> uint32_t& { return key.first; };
  for (auto& [start, window] : windows_) renumberKeys(window, new_index, [](uint32_t& comm) -> uint32_t& { return comm; });
  renumberKeys(streaks_, new_index, first);
  for (auto& [seat, streak] : streaks_) streak.last_alert.comm = seat.first;
  renumberKeys(totals_.by_op_class, new_index, [](LiveTotals::OpClass& key) -> uint32_t& { return key.comm; });
}

std::map<std::pair<uint32_t, int>, LiveAlert> LiveStragglers::straggling() const {
  std::map<std::pair<uint32_t, int>, LiveAlert> out;
  for (const auto& [seat, streak] : streaks_)
    if (streak.straggling) out.emplace(seat, streak.last_alert);
  return out;
}

void LiveStragglers::advance(uint64_t watermark_utc_ns) {
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
      if (w.seats[static_cast<size_t>(r)].instances != 0) judgeSeat(comm, r, window_start_utc_ns, w);
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
         s.last / static_cast<double>(s.instances), s.last > 0 ? static_cast<double>(s.lateness_ns) / s.last / 1e3 : 0.0, effect,
         confidenceOf(std::min(z / options_.min_z, effect / options_.min_effect))};
    a.func = std::max_element(w.funcs.begin(), w.funcs.end(), [](const auto& x, const auto& y) { return x.second < y.second; })->first;
    const bool measured = s.gaps_measured != 0;
    a.gap_excess_us = measured ? s.gap_excess_us / static_cast<double>(s.gaps_measured) : 0;
    StragglerClass cls = classFromGaps(measured, a.gap_excess_us, a.lateness_us, /*ends_slow_link=*/false);
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
