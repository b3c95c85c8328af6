#include "tools/report/analyses/bandwidth.h"

#include <algorithm>
#include <bit>
#include <map>
#include <tuple>

#include "tools/report/analyses/op_metrics.h"
#include "tools/report/analyses/p2p_calls.h"
#include "tools/report/analyses/stats.h"

namespace commtrace::report {
namespace {

constexpr int kUnknownSize = -1;

struct GroupKey {
  uint32_t comm = 0;
  NameId func = 0;
  int bucket = kUnknownSize;  // floor(log2(S))
  NameId algo = 0;
  NameId proto = 0;
  auto operator<=>(const GroupKey&) const = default;
};

struct GroupSamples {
  uint64_t count = 0;
  bool p2p = false;
  std::vector<double> sizes, times_us, algbw, busbw;
};

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

// "4-8 MiB": [2^k, 2^(k+1)), named by its bounds.
std::string bucketLabel(int bucket) {
  if (bucket == kUnknownSize) return "unknown size";
  const std::string lo = sizeText(uint64_t{1} << bucket), hi = sizeText(uint64_t{1} << (bucket + 1));
  const size_t lo_unit = lo.find(' '), hi_unit = hi.find(' ');
  if (lo.substr(lo_unit) == hi.substr(hi_unit)) return lo.substr(0, lo_unit) + "-" + hi;
  return lo + "-" + hi;
}

void addSample(GroupSamples& g, uint64_t s, double factor, uint64_t transfer_ns) {
  ++g.count;
  if (s != 0) g.sizes.push_back(static_cast<double>(s));
  if (transfer_ns == 0) return;
  g.times_us.push_back(static_cast<double>(transfer_ns) / 1e3);
  if (s == 0) return;
  const double alg = gbPerS(static_cast<double>(s), transfer_ns);
  g.algbw.push_back(alg);
  g.busbw.push_back(alg * factor);
}

std::string whyNoBandwidth(const GroupKey& key, const GroupSamples& g) {
  if (g.times_us.empty())
    return g.p2p ? "no GPU times recorded (NCCL 2.27's v4 profiler gives point-to-point ops none)"
                 : "no GPU times recorded (no kernel-channel events reached the plugin)";
  if (key.bucket == kUnknownSize) return "size not recorded (NCCL names ncclUint8 \"Unknown\"): counted, no bandwidth";
  return "";
}

BandwidthRow rowOf(const RunModel& run, const GroupKey& key, GroupSamples& g) {
  const Communicator& comm = run.comms[key.comm];
  BandwidthRow row;
  row.comm = comm.id;
  row.comm_name = std::string(run.name(comm.name));
  row.func = std::string(run.name(key.func));
  row.bytes = static_cast<uint64_t>(percentile(g.sizes, 0.5));
  row.bucket = bucketLabel(key.bucket);
  row.algo = std::string(run.name(key.algo));
  row.proto = std::string(run.name(key.proto));
  row.count = g.count;
  row.timed = g.times_us.size();
  row.no_bandwidth = whyNoBandwidth(key, g);
  row.time_us_p50 = percentile(g.times_us, 0.5);
  row.time_us_p90 = percentile(g.times_us, 0.9);
  row.algbw_gbs_p50 = percentile(g.algbw, 0.5);
  row.busbw_gbs_p50 = percentile(g.busbw, 0.5);
  return row;
}

}  // namespace

std::vector<BandwidthRow> bandwidthTable(const RunModel& run) {
  std::map<GroupKey, GroupSamples> groups;
  for (const CollInstance& c : run.collectives) {
    const std::string_view func = run.name(c.func);
    const int n = static_cast<int>(c.n_members);
    const uint64_t s = ncclTestsBytes(func, c.bytes, n);
    addSample(groups[{c.comm, c.func, bucketOf(s), c.algo, c.proto}], s, busBwFactor(func, n), transferNs(run, c));
  }
  for (const P2pTransfer& t : run.transfers) {
    if (isCallPiece(run.name(t.func))) continue;  // counted with its call below
    GroupSamples& g = groups[{t.comm, t.func, bucketOf(t.bytes), 0, 0}];
    g.p2p = true;
    addSample(g, t.bytes, 1.0, transferNs(t));
  }
  for (const P2pCall& call : p2pCalls(run)) {
    const std::string_view func = run.name(call.func);
    const int n = static_cast<int>(call.members.size());
    const uint64_t s = ncclTestsBytes(func, call.bytes, n);
    GroupSamples& g = groups[{call.comm, call.func, bucketOf(s), 0, 0}];
    g.p2p = true;
    addSample(g, s, busBwFactor(func, n), transferNs(call));
  }
  std::vector<std::pair<uint32_t, BandwidthRow>> rows;
  for (auto& [key, samples] : groups) rows.emplace_back(key.comm, rowOf(run, key, samples));
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first, a.second.func, a.second.bytes, a.second.algo, a.second.proto) <
           std::tie(b.first, b.second.func, b.second.bytes, b.second.algo, b.second.proto);
  });
  std::vector<BandwidthRow> out;
  out.reserve(rows.size());
  for (auto& [comm, row] : rows) out.push_back(std::move(row));
  return out;
}

}  // namespace commtrace::report
