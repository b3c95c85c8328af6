#include "tools/report/advice_words.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "tools/report/analyses/stragglers.h"
#include "tools/report/evidence_words.h"
#include "tools/report/format.h"

namespace commtrace::report {
namespace {

// NCCL_ALGO and NCCL_PROTO spell what the profiler names "RING", "SIMPLE", ... thus.
std::string ncclAlgoValue(const std::string& algo) {
  static const std::map<std::string, std::string> kValues{{"RING", "Ring"}, {"TREE", "Tree"}, {"COLLNET_DIRECT", "CollnetDirect"},
                                                          {"COLLNET_CHAIN", "CollnetChain"}, {"NVLS", "NVLS"}, {"NVLS_TREE", "NVLSTree"},
                                                          {"PAT", "PAT"}};
  const auto it = kValues.find(algo);
  return it == kValues.end() ? algo : it->second;
}
std::string ncclProtoValue(const std::string& proto) { return proto == "SIMPLE" ? "Simple" : proto; }

std::string busBw(const BandwidthRow& b) {
  return fmt::gbs(b.busbw_gbs_p50) + " (" + b.algo + "/" + b.proto + ", p50 over " + std::to_string(b.timed) + ")";
}

constexpr uint64_t kMinTimed = 5;          // instances behind a measured busBw worth comparing
constexpr double kFasterBy = 1.25;         // another algorithm or protocol this much faster
constexpr uint64_t kSmallBytes = 1u << 20; // below this a collective is latency-bound
constexpr uint64_t kLargeBytes = 16u << 20;
constexpr double kSmallPerStep = 8;        // this many small collectives a step are worth merging
constexpr double kSlowShare = 0.25;        // of the communicator's large-message busBw
constexpr double kExposedShare = 0.3;      // of a rank's step
constexpr double kFewerChannelsSlower = 0.75;  // a large op on fewer channels at most this share of its communicator's best busBw

void algorithmAdvice(const Report& r, std::vector<AdviceRow>& out) {
  std::map<std::tuple<uint64_t, std::string, std::string>, std::vector<const BandwidthRow*>> groups;  // (comm, func, bucket)
  for (const BandwidthRow& b : r.bandwidth)
    if (!b.algo.empty() && b.timed >= kMinTimed && b.busbw_gbs_p50 > 0) groups[{b.comm, b.func, b.bucket}].push_back(&b);
  for (const auto& [key, rows] : groups) {
    if (rows.size() < 2) continue;
    const auto [slow, fast] = std::minmax_element(rows.begin(), rows.end(), [](const BandwidthRow* a, const BandwidthRow* b) {
      return a->busbw_gbs_p50 < b->busbw_gbs_p50;
    });
    if ((*fast)->busbw_gbs_p50 < kFasterBy * (*slow)->busbw_gbs_p50) continue;
    const BandwidthRow& f = **fast;
    const std::string comm = fmt::commLabel(f.comm, f.comm_name);
    out.push_back({"nccl_algo", comm,
                   "try NCCL_ALGO=" + ncclAlgoValue(f.algo) + " NCCL_PROTO=" + ncclProtoValue(f.proto) + " for " + f.func + " of " + f.bucket +
                       " (the variables apply to every communicator and size: compare the run with and without)",
                   f.func + " of " + f.bucket + " on " + comm + ": busBw " + busBw(f) + " against " + busBw(**slow)});
  }
}

void bucketAdvice(const Report& r, double steps, std::vector<AdviceRow>& out) {
  if (steps < 2) return;
  std::map<std::pair<uint64_t, std::string>, std::pair<const BandwidthRow*, const BandwidthRow*>> by_func;  // busiest small, fastest large
  for (const BandwidthRow& b : r.bandwidth) {
    if (b.busbw_gbs_p50 <= 0 || b.timed < kMinTimed || (b.func != "AllReduce" && b.func != "AllGather" && b.func != "ReduceScatter")) continue;
    auto& [small, large] = by_func[{b.comm, b.func}];
    if (b.bytes < kSmallBytes && (small == nullptr || b.count > small->count)) small = &b;
    if (b.bytes >= kLargeBytes && (large == nullptr || b.busbw_gbs_p50 > large->busbw_gbs_p50)) large = &b;
  }
  for (const auto& [key, pair] : by_func) {
    const auto [small, large] = pair;
    if (small == nullptr || large == nullptr) continue;
    const double per_step = static_cast<double>(small->count) / steps;
    if (per_step < kSmallPerStep || small->busbw_gbs_p50 > kSlowShare * large->busbw_gbs_p50) continue;
    const std::string comm = fmt::commLabel(small->comm, small->comm_name);
    out.push_back({"bucket_size", comm,
                   "fewer, larger " + small->func + "s on " + comm + " (a larger DDP bucket_cap_mb, FSDP units of more layers, gradients "
                   "coalesced): small ones are bound by latency, not by the links",
                   fmt::fixed(per_step, 0) + " " + small->func + "s of " + small->bucket + " a step at busBw " + fmt::gbs(small->busbw_gbs_p50) +
                       " where " + large->bucket + " ones reached " + fmt::gbs(large->busbw_gbs_p50) + " on the same communicator"});
  }
}

// A large collective that ran on fewer channels than others of its communicator did, and
// slower: NCCL sized its channels down, and its links were not filled.
void channelAdvice(const Report& r, std::vector<AdviceRow>& out) {
  std::map<uint64_t, std::vector<const BandwidthRow*>> large;  // comm -> its large, timed collectives
  for (const BandwidthRow& b : r.bandwidth)
    if (!b.algo.empty() && b.channels > 0 && b.bytes >= kLargeBytes && b.timed >= kMinTimed && b.busbw_gbs_p50 > 0) large[b.comm].push_back(&b);
  for (const auto& [comm_id, rows] : large) {
    const BandwidthRow* best = *std::max_element(rows.begin(), rows.end(), [](const BandwidthRow* a, const BandwidthRow* b) {
      return std::tie(a->channels, a->busbw_gbs_p50) < std::tie(b->channels, b->busbw_gbs_p50);
    });
    const BandwidthRow* worst = nullptr;
    for (const BandwidthRow* b : rows)
      if (b->channels < best->channels && b->busbw_gbs_p50 <= kFewerChannelsSlower * best->busbw_gbs_p50 &&
          (worst == nullptr || b->busbw_gbs_p50 < worst->busbw_gbs_p50))
        worst = b;
    if (worst == nullptr) continue;
    const std::string comm = fmt::commLabel(worst->comm, worst->comm_name);
    out.push_back({"nccl_channels", comm,
                   "try NCCL_MIN_NCHANNELS=" + std::to_string(best->channels) + " (it applies to every communicator: compare the run with "
                   "and without)",
                   worst->func + " of " + worst->bucket + " on " + comm + " ran on " + std::to_string(worst->channels) + " channels at busBw " +
                       busBw(*worst) + "; " + best->func + " of " + best->bucket + " on the same communicator ran on " +
                       std::to_string(best->channels) + " at " + busBw(*best)});
  }
}

bool hasKind(const Report& r, const char* kind) {
  return std::any_of(r.parallelism.begin(), r.parallelism.end(), [&](const ParallelismRow& p) { return p.kinds.find(kind) != std::string::npos; });
}

void overlapAdvice(const Report& r, std::vector<AdviceRow>& out) {
  const OverlapRow* worst = nullptr;
  for (const OverlapRow& o : r.overlap)
    if (o.available && o.step_count >= 2 && o.mean_step_us > 0 && (worst == nullptr || o.exposed_us > worst->exposed_us)) worst = &o;
  if (worst == nullptr) return;
  const double per_step = worst->exposed_us / worst->step_count, share = per_step / worst->mean_step_us;
  if (share < kExposedShare || share > 1) return;  // over 1: its steps were miscounted (records lost)
  // How, for each parallelism the job shows.
  std::string how;
  const auto add = [&](const char* hint) { how += (how.empty() ? "" : "; ") + std::string(hint); };
  if (hasKind(r, "fsdp") || hasKind(r, "zero")) add("prefetch the next gathers (FSDP forward_prefetch, backward_prefetch=BACKWARD_PRE)");
  if (hasKind(r, "ddp")) add("let DDP's buckets start during backward (smaller first buckets, no sync before backward ends)");
  if (hasKind(r, "tp")) add("overlap tensor-parallel collectives with the next matmuls (sequence parallelism, asynchronous TP)");
  if (how.empty()) how = "start communication earlier or hide it under compute";
  out.push_back({"overlap", "rank " + std::to_string(worst->rank), how,
                 "rank " + std::to_string(worst->rank) + "'s communication not hidden behind compute: " + fmt::duration(per_step) +
                     " per step of " + fmt::duration(worst->mean_step_us) + " (" + fmt::percent(share) + ")"});
}

void culpritAdvice(const Report& r, std::vector<AdviceRow>& out) {
  for (const HostStragglerRow& h : r.stragglers.hosts) {
    if (!h.flagged) continue;
    out.push_back({"drain_host", "host " + h.host,
                   "check host " + h.host + " (GPU clocks and temperature, ECC errors, other jobs on it) or take it out of the job",
                   "its ranks " + fmt::rankList(h.ranks) + " created delays that made the others wait " + fmt::duration(h.wait_caused_us)});
  }
  for (const StragglerRow& s : r.stragglers.ranks) {
    if (!s.flagged || onFlaggedHost(r.stragglers, s.rank)) continue;
    const std::string rank = "rank " + std::to_string(s.rank);
    if (s.cls == "host")
      out.push_back({"straggler_host", rank, "look at " + rank + "'s CPU side: data loading, garbage collection, logging, a busy core",
                     rank + "'s GPU sat idle waiting for its host before the ops it was late at (class host)"});
    else if (s.cls == "input")
      out.push_back({"straggler_input", rank,
                     "look at " + rank + "'s input pipeline: data-loader workers, prefetching, reads from storage (and periodic checkpoints)",
                     rank + "'s GPU waited for its host now and then, at " + fmt::percent(s.delay_fraction) +
                         " of its synchronizations (class input)"});
    else if (s.cls == "compute")
      out.push_back({"straggler_compute", rank, "look at " + rank + "'s GPU (clocks, temperature) or its share of the work (uneven batches or layers)",
                     rank + "'s GPU computed longer before the ops it was late at (class compute)"});
    else if (s.cls == "network")
      out.push_back({"straggler_network", rank, "check " + rank + "'s links (NIC, cable, switch port): its ops' transfers ran slow",
                     rank + " ends a slow link whose ops held it up (class network)"});
    else  // "unknown": what it created is not in its GPU gaps as recorded
      out.push_back({"straggler_record_more", rank,
                     "record the GPU's kernels (COMMTRACE_CUPTI=1, the default where CUPTI is free) and run the job again: they tell whether " +
                         rank + "'s delays were compute or host",
                     rank + "'s delays caused " + fmt::duration(s.wait_caused_us) + " of waiting, but its gaps as recorded do not say why (class unknown)"});
  }
  for (const SlowLinkRow& l : r.stragglers.links)
    if (l.flagged)
      out.push_back({"check_link", l.hosts,
                     "check the path between ranks " + std::to_string(l.a) + " and " + std::to_string(l.b) + " (" + l.hosts + "): NIC, cable, switch port",
                     evidenceWords(l)});
}

}  // namespace

std::vector<AdviceRow> adviceFor(const Report& r, double steps) {
  std::vector<AdviceRow> out;
  culpritAdvice(r, out);
  overlapAdvice(r, out);
  algorithmAdvice(r, out);
  bucketAdvice(r, steps, out);
  channelAdvice(r, out);
  return out;
}

}  // namespace commtrace::report
