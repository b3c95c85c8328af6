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

void RankTrafficTally::merge(const RankTrafficTally& other) {
  for (size_t p = 0; p < other.by_process_.size(); ++p) {
    const Sums& theirs = other.by_process_[p];
    Sums& s = of(static_cast<int32_t>(p));
    s.collectives += theirs.collectives;
    s.coll_bytes += theirs.coll_bytes;
    s.sends += theirs.sends;
    s.sent_bytes += theirs.sent_bytes;
    s.receives += theirs.receives;
    s.received_bytes += theirs.received_bytes;
  }
}

namespace {

uint64_t bytesOut(const RankTrafficRow& r) { return r.coll_bytes + r.sent_bytes; }

}  // namespace

std::vector<RankTrafficRow> rankTraffic(const RunModel& run, const RankTrafficTally& tally) {
  std::map<int, RankTrafficRow> by_rank;
  for (size_t p = 0; p < tally.byProcess().size() && p < run.processes.size(); ++p) {
    const int rank = run.processes[p].rank;
    if (rank < 0) continue;
    const RankTrafficTally::Sums& s = tally.byProcess()[p];
    RankTrafficRow& row = by_rank[rank];
    row.rank = rank;
    row.host = run.processes[p].host;
    row.collectives += s.collectives;
    row.coll_bytes += s.coll_bytes;
    row.sends += s.sends;
    row.sent_bytes += s.sent_bytes;
    row.receives += s.receives;
    row.received_bytes += s.received_bytes;
  }
  std::vector<RankTrafficRow> out;
  for (auto& [rank, row] : by_rank)
    if (row.collectives + row.sends + row.receives > 0) out.push_back(std::move(row));
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
