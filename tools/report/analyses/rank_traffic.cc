#include "tools/report/analyses/rank_traffic.h"

#include <algorithm>
#include <map>

namespace commtrace::report {

RankTrafficTally::Sums& RankTrafficTally::of(int32_t process) {
  const auto p = static_cast<size_t>(process);
  if (p >= by_process_.size()) by_process_.resize(p + 1);
  return by_process_[p];
}

void RankTrafficTally::collective(const CollInstance& instance, std::span<const MemberView> members) {
  for (const MemberView& m : members) {
    if (m.process < 0) continue;
    Sums& s = of(m.process);
    ++s.collectives;
    s.coll_bytes += instance.bytes;
  }
}

void RankTrafficTally::transfer(const P2pTransfer& t) {
  if (t.send.process >= 0) {
    Sums& s = of(t.send.process);
    ++s.sends;
    s.sent_bytes += t.bytes;
  }
  if (t.recv.process >= 0) {
    Sums& s = of(t.recv.process);
    ++s.receives;
    s.received_bytes += t.bytes;
  }
}

RankTrafficTally::Sums& RankTrafficTally::Sums::operator+=(const Sums& o) {
  collectives += o.collectives;
  coll_bytes += o.coll_bytes;
  sends += o.sends;
  sent_bytes += o.sent_bytes;
  receives += o.receives;
  received_bytes += o.received_bytes;
  return *this;
}

void RankTrafficTally::merge(const RankTrafficTally& other) {
  for (size_t p = 0; p < other.by_process_.size(); ++p) of(static_cast<int32_t>(p)) += other.by_process_[p];
}

namespace {

uint64_t bytesOut(const RankTrafficRow& r) { return r.coll_bytes + r.sent_bytes; }

}  // namespace

std::vector<RankTrafficRow> rankTraffic(const RunModel& run, const RankTrafficTally& tally) {
  std::map<int, std::pair<std::string, RankTrafficTally::Sums>> by_rank;  // host, sums
  for (size_t p = 0; p < tally.byProcess().size() && p < run.processes.size(); ++p) {
    const ProcessInfo& process = run.processes[p];
    if (process.rank < 0) continue;
    auto& [host, sums] = by_rank[process.rank];
    host = process.host;
    sums += tally.byProcess()[p];
  }
  std::vector<RankTrafficRow> out;
  for (const auto& [rank, traffic] : by_rank) {
    const RankTrafficTally::Sums& s = traffic.second;
    if (s.collectives + s.sends + s.receives == 0) continue;
    out.push_back({.rank = rank, .host = traffic.first, .collectives = s.collectives, .coll_bytes = s.coll_bytes, .sends = s.sends,
                   .sent_bytes = s.sent_bytes, .receives = s.receives, .received_bytes = s.received_bytes});
  }
  if (out.empty()) return out;
  std::vector<uint64_t> totals;
  for (const RankTrafficRow& r : out) totals.push_back(bytesOut(r));
  std::nth_element(totals.begin(), totals.begin() + static_cast<std::ptrdiff_t>(totals.size() / 2), totals.end());
  const uint64_t median = totals[totals.size() / 2];  // of an even count, the upper of the middle two
  for (RankTrafficRow& r : out) r.bytes_vs_median = median > 0 ? static_cast<double>(bytesOut(r)) / static_cast<double>(median) : 0;
  std::stable_sort(out.begin(), out.end(), [](const RankTrafficRow& a, const RankTrafficRow& b) { return bytesOut(a) > bytesOut(b); });
  return out;
}

}  // namespace commtrace::report
