#include "tools/report/analyses/bandwidth.h"

#include <algorithm>
#include <bit>
#include <map>
#include <tuple>

#include "tools/report/analyses/op_metrics.h"
#include "tools/report/analyses/p2p_calls.h"

namespace commtrace::report {
namespace {

constexpr int kUnknownSize = -1;

using GroupKey = BandwidthTally::Key;
using GroupSamples = BandwidthTally::Samples;

int bucketOf(uint64_t s) { return s == 0 ? kUnknownSize : static_cast<int>(std::bit_width(s)) - 1; }

std::string sizeText(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int unit = 0;
  while (bytes >= 1024 && bytes % 1024 == 0 && unit < 6) {
    bytes /= 1024;
    ++unit;
  }
  return std::to_string(bytes) + " " + kUnits[unit];
}

// "4-8 MiB": [2^k, 2^(k+1)), named by its bounds; the last, whose upper bound is past 64
// bits (a record's byte count is whatever it says), by its lower.
std::string bucketLabel(int bucket) {
  if (bucket == kUnknownSize) return "unknown size";
  if (bucket >= 63) return sizeText(uint64_t{1} << 63) + " or more";
  const std::string lo = sizeText(uint64_t{1} << bucket), hi = sizeText(uint64_t{1} << (bucket + 1));
  const size_t lo_unit = lo.find(' '), hi_unit = hi.find(' ');
  if (lo.substr(lo_unit) == hi.substr(hi_unit)) return lo.substr(0, lo_unit) + "-" + hi;
  return lo + "-" + hi;
}

// One op into its group: n members moving per_rank_bytes each, S and busBw as nccl-tests
// counts them for its func (a plain Send: S = its bytes, factor 1).
void addOp(std::map<GroupKey, GroupSamples>& groups, GroupKey key, uint64_t per_rank_bytes, int n, bool p2p,
           uint64_t transfer_ns, uint8_t channels) {
  const nccl::FuncInfo* func = NamePool::ncclFunc(key.func);
  const uint64_t s = nccl::ncclTestsBytes(func, per_rank_bytes, n);
  key.bucket = bucketOf(s);
  GroupSamples& g = groups[key];
  g.busbw_factor = nccl::busBwFactor(func, n);
  g.p2p = p2p;
  g.channels = std::max(g.channels, channels);
  ++g.count;
  if (s != 0) g.sizes.add(static_cast<double>(s));
  if (transfer_ns == 0) return;
  g.times_us.add(static_cast<double>(transfer_ns) / 1e3);
  g.time_total_ns += transfer_ns;
  g.time_min_ns = std::min(g.time_min_ns, transfer_ns);
  g.time_max_ns = std::max(g.time_max_ns, transfer_ns);
  if (s != 0) g.algbw.add(gbPerS(static_cast<double>(s), transfer_ns));
}

std::string whyNoBandwidth(const GroupKey& key, const GroupSamples& g) {
  if (g.times_us.count() == 0)
    return g.p2p ? "no GPU times recorded (NCCL 2.27's v4 profiler gives point-to-point ops none)"
                 : "no GPU times recorded (no kernel-channel events reached the plugin)";
  if (key.bucket == kUnknownSize) return "size not recorded (NCCL names ncclUint8 \"Unknown\"): counted, no bandwidth";
  return "";
}

BandwidthRow rowOf(const RunModel& run, const GroupKey& key, const GroupSamples& g) {
  const Communicator& comm = run.comms[key.comm];
  BandwidthRow row;
  row.comm = comm.id;
  row.comm_name = std::string(run.name(comm.name));
  row.func = std::string(run.name(key.func));
  row.bytes = static_cast<uint64_t>(g.sizes.quantile(0.5));
  row.bucket = bucketLabel(key.bucket);
  row.algo = std::string(run.name(key.algo));
  row.proto = std::string(run.name(key.proto));
  row.count = g.count;
  row.channels = g.channels;
  row.timed = g.times_us.count();
  row.no_bandwidth = whyNoBandwidth(key, g);
  const bool exact = g.sizes.exact() && g.times_us.exact() && g.algbw.exact();
  row.percentile_error = exact ? 0.0 : QuantileSketch::kRelativeError;
  row.time_us_p50 = g.times_us.quantile(0.5);
  row.time_us_p90 = g.times_us.quantile(0.9);
  if (row.timed != 0) {
    row.time_us_total = static_cast<double>(g.time_total_ns) / 1e3;
    row.time_us_min = static_cast<double>(g.time_min_ns) / 1e3;
    row.time_us_max = static_cast<double>(g.time_max_ns) / 1e3;
  }
  row.algbw_gbs_p50 = g.algbw.quantile(0.5);
  // busBw is algBw times the group's factor, so its median is the scaled median.
  row.busbw_gbs_p50 = row.algbw_gbs_p50 * g.busbw_factor;
  return row;
}

}  // namespace

void BandwidthTally::Samples::merge(const Samples& other) {
  count += other.count;
  p2p = p2p || other.p2p;
  busbw_factor = other.busbw_factor;
  sizes.merge(other.sizes);
  times_us.merge(other.times_us);
  time_total_ns += other.time_total_ns;
  time_min_ns = std::min(time_min_ns, other.time_min_ns);
  time_max_ns = std::max(time_max_ns, other.time_max_ns);
  channels = std::max(channels, other.channels);
  algbw.merge(other.algbw);
}

void BandwidthTally::collective(const CollInstance& c, std::span<const MemberView> members) {
  addOp(groups_, {c.comm, c.func, 0, c.algo, c.proto}, c.bytes, static_cast<int>(c.n_members), false, transferNs(members), c.n_channels);
}

void BandwidthTally::transfer(const P2pTransfer& t) {
  if (NamePool::isCallPiece(t.func)) return;  // counted with its call
  addOp(groups_, {t.comm, t.func, 0, 0, 0}, t.bytes, 2, true, transferNs(t), t.n_channels);
}


void BandwidthTally::merge(const BandwidthTally& other) {
  for (const auto& [key, samples] : other.groups_) groups_[key].merge(samples);
}

void BandwidthTally::call(const P2pCall& call) {
  addOp(groups_, {call.comm, call.func, 0, 0, 0}, call.bytes, static_cast<int>(call.members.size()), true, transferNs(call), 0);
}

std::vector<BandwidthRow> BandwidthTally::rows(const RunModel& run) const {
  std::vector<std::pair<uint32_t, BandwidthRow>> rows;
  for (const auto& [key, samples] : groups_) rows.emplace_back(key.comm, rowOf(run, key, samples));
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first, a.second.func, a.second.bytes, a.second.algo, a.second.proto) <
           std::tie(b.first, b.second.func, b.second.bytes, b.second.algo, b.second.proto);
  });
  double all_us = 0;
  for (const auto& [comm, row] : rows) all_us += row.time_us_total;
  std::vector<BandwidthRow> out;
  out.reserve(rows.size());
  for (auto& [comm, row] : rows) {
    row.time_fraction = all_us > 0 ? row.time_us_total / all_us : 0;
    out.push_back(std::move(row));
  }
  return out;
}

std::vector<BandwidthRow> bandwidthTable(const RunModel& run) {
  BandwidthTally tally;
  P2pCallJoiner calls([&](const P2pCall& c) { tally.call(c); });
  OpFanout both({&calls, &tally});  // the calls first: their finish() hands on the last ones
  replayRun(run, both);
  return tally.rows(run);
}

}  // namespace commtrace::report
