#include "tools/report/evidence_words.h"

#include <algorithm>
#include <cmath>

#include "tools/report/analyses/arrival_windows.h"
#include "tools/report/analyses/slow_links.h"
#include "tools/report/analyses/stragglers.h"
#include "tools/report/format.h"

namespace commtrace::report {
namespace {

// How often it created the delay others waited for, against chance of being last; how
// systematically its GPU gaps exceed its peers' (the z the flag is judged by, not a z of the
// share before it: a rank below chance printed "z = 7.4" beside its share and read as if
// that share stood 7.4 deviations above chance); and the waiting its delays caused against
// the typical rank's.
std::string lastArrivals(const StragglerRow& r) {
  // Ranks tied for last share that instance, so the count is a sum of shares: say it as a share.
  std::string e = "created the delay in " + fmt::percent(r.late_fraction) + " of " + std::to_string(r.instances) +
                  " synchronizations (a tie for last shared) where chance gives " + fmt::percent(r.chance_fraction) +
                  "; its GPU gaps before its ops exceed its peers' by z = " + fmt::fixed(r.z, 1) + " standard errors";
  if (r.z < kMinZ && r.stretch_z >= kMinStretchZ)
    e += ", and in its worst stretch of a communicator's instances by z = " + fmt::fixed(r.stretch_z, 1);
  e += "; its delays caused " + fmt::duration(r.wait_caused_us) + " of waiting";
  if (r.median_wait_caused_us > 0)
    return e + ", " + fmt::fixed(r.wait_caused_us / r.median_wait_caused_us, 1) + "x the typical rank's " + fmt::duration(r.median_wait_caused_us);
  return e + "; the typical rank caused none";
}

// The gaps before the ops it arrived last at, against its peers'.
std::string gaps(const StragglerRow& r) {
  return "GPU gap before the " + std::to_string(r.gap_ops) + " ops it arrived last at: median " + fmt::duration(r.gap_us_p50) +
         " vs its peers' " + fmt::duration(r.peer_gap_us_p50) + ", longer by a median " + fmt::duration(r.gap_excess_us_p50) +
         " against its lateness of " + fmt::duration(r.late_lateness_us_p50);
}

std::string sampled(const StragglerRow& r) {
  return r.gap_sampled < r.gap_ops ? " (in a sample of " + std::to_string(r.gap_sampled) + " of them)" : "";
}

std::string computeShare(const StragglerRow& r) {
  return "; compute kernels account for " + fmt::fixed(100 * r.compute_share, 0) + "% of the longer gap" + sampled(r);
}

std::string enqueued(const StragglerRow& r) {
  return "; the CPU enqueued the op " + fmt::fixed(100 * r.enqueue_fraction, 0) + "% of the way into the gap" + sampled(r);
}

// What decided its class.
std::string classBasis(const StragglerRow& r) {
  constexpr const char* kExplains = "; the longer gap explains the lateness";
  switch (r.basis) {
    case StragglerBasis::kNone: return "";
    case StragglerBasis::kNoGap: return "no earlier op on its GPU to measure the gap before its late arrivals from";
    case StragglerBasis::kSlowLink:
      return gaps(r) + "; the gap does not explain the lateness, and the rank is an end of a slow link whose ops held it up";
    case StragglerBasis::kEarlierOp: return gaps(r) + "; the gap does not explain the lateness: an earlier op held it up";
    case StragglerBasis::kComputeKernels: return gaps(r) + kExplains + computeShare(r) + ": its compute kernels ran longer";
    case StragglerBasis::kHostIdleGpu: return gaps(r) + kExplains + computeShare(r) + ": the rest the GPU sat idle waiting for the host";
    case StragglerBasis::kEnqueuedLate: return gaps(r) + kExplains + enqueued(r) + ": the GPU waited for the host";
    case StragglerBasis::kEnqueuedEarly:
      return gaps(r) + kExplains + enqueued(r) + ": enqueued early, the GPU was busy (no kernel records to show with what)";
    case StragglerBasis::kInferred:
      return gaps(r) + kExplains + "; no kernel records or clock samples: compute inferred, host-side delay not ruled out";
  }
  return "";
}

}  // namespace

std::string evidenceWords(const StragglerRow& row) {
  std::string basis = classBasis(row);
  if (row.cls == "input")
    basis += "; but only now and then: a delay at " + fmt::percent(row.delay_fraction) +
             " of its synchronizations, an input pipeline's stall (a periodic checkpoint or garbage collection reads the same)";
  return basis.empty() ? lastArrivals(row) : lastArrivals(row) + "; " + basis;
}

std::string evidenceWords(const SlowLinkRow& row) {
  const std::string kind = row.inter_host ? "inter-host" : "intra-host";
  if (judgedByWire(row))
    return fmt::gbs(row.wire_gbs) + " on the wire over " + std::to_string(row.wire_steps) + " proxy send steps, " +
           fmt::fixed(100.0 * row.wire_gbs / row.wire_median_gbs, 0) + "% of the " + fmt::gbs(row.wire_median_gbs) + " median of " +
           std::to_string(row.wire_links) + " " + kind + " links timed so; its sender waited for the peer " +
           fmt::percent(row.wire_peer_wait_share) + " of that time" +
           (row.ops > 0 ? "; ops crossing it reached at best " + fmt::gbs(row.achieved_gbs) : "");
  const std::string best = "best " + fmt::gbs(row.achieved_gbs) + " over " + std::to_string(row.ops) + " ops";
  if (row.kind_links < static_cast<uint64_t>(kMinLinksOfAKind) || row.peer_median_gbs <= 0)
    return best + "; only " + std::to_string(row.kind_links) + " " + kind + " links measured, too few to say what is normal";
  return best + " (" + std::to_string(row.direct_ops) + " on this pair alone), " + fmt::fixed(100.0 * row.achieved_gbs / row.peer_median_gbs, 0) +
         "% of the " + fmt::gbs(row.peer_median_gbs) + " median of " + std::to_string(row.kind_links) + " " + kind + " links";
}

std::string liveClassWords(const LiveAlert& a) {
  const std::string excess = (a.gap_excess_us >= 0 ? "+" : "-") + fmt::duration(std::abs(a.gap_excess_us));
  switch (a.basis) {
    case StragglerBasis::kInferred:
      return "compute: its GPU's gap before them " + excess + " over its peers', host delay not ruled out";
    case StragglerBasis::kEarlierOp:
      return "cause unknown: its GPU's gap before them (" + excess + " over its peers') does not explain it, an earlier op or the network held it up";
    default: return "cause unknown: no GPU times to measure its gaps";
  }
}

namespace {

// "rank 11 (host h2, GPU 3)"
std::string whoWords(const RunModel& run, int32_t process) {
  const ProcessInfo* p = run.processAt(process);
  std::string who = "rank " + std::to_string(p != nullptr ? p->rank : -1);
  if (p != nullptr && !p->host.empty()) who += " (host " + p->host + (p->local_rank >= 0 ? ", GPU " + std::to_string(p->local_rank) : "") + ")";
  return who;
}

std::string patternWords(std::string_view kind) {
  if (kind == "ep") return "expert parallel (MoE AlltoAll)";
  if (kind == "pp") return "pipeline parallel (sends between stages)";
  if (kind == "fsdp") return "fully sharded data parallel (FSDP / ZeRO-3: parameters gathered again for backward)";
  if (kind == "zero") return "sharded data parallel (one AllGather per ReduceScatter: ZeRO-1/2, FSDP without resharding)";
  if (kind == "tp") return "tensor parallel";
  if (kind == "ddp") return "data parallel (DDP)";
  return std::string(kind);  // "other"
}

}  // namespace

void describeParallelism(ParallelismRow& row) {
  row.pattern.clear();
  for (size_t from = 0; from <= row.kinds.size();) {
    const size_t comma = std::min(row.kinds.find(',', from), row.kinds.size());
    row.pattern += (row.pattern.empty() ? "" : " + ") + patternWords(std::string_view(row.kinds).substr(from, comma - from));
    from = comma + 1;
  }
  constexpr size_t kNamed = 4;
  row.comms.clear();
  for (size_t i = 0; i < row.comm_labels.size() && i < kNamed; ++i) row.comms += (i == 0 ? "" : ", ") + row.comm_labels[i];
  if (row.comm_labels.size() > kNamed) row.comms += " and " + std::to_string(row.comm_labels.size() - kNamed) + " more";
  // "AllReduce 2 per step (8-16 MiB), AlltoAll 1 per step (512 KiB-1 MiB)"
  row.evidence.clear();
  for (const ParallelismRow::FuncUse& u : row.uses) {
    if (!row.evidence.empty()) row.evidence += ", ";
    row.evidence += u.func + " " + fmt::count(u.count) + (row.per_step ? " per step" : " in all");
    if (!u.bucket.empty()) row.evidence += " (" + u.bucket + ")";
  }
}

std::string alertLine(const RunModel& run, const LiveAlert& a) {
  const Communicator& comm = run.comms[a.comm];
  const std::string_view comm_name = run.name(comm.name);
  const std::string who = whoWords(run, a.process);
  const std::string where = std::string(run.name(a.func)) + " on " + fmt::commLabel(comm.id, comm_name);
  if (a.kind == LiveAlert::Kind::kRecovered)
    return "commtrace: RECOVERED " + who + " no longer late at " + where + " since " + fmt::utcTime(a.since_utc_ns);
  return "commtrace: STRAGGLER " + who + " +" + fmt::duration(a.lateness_us) + " per step late at " + fmt::percent(a.late_share) + " of " + where +
         " since " + fmt::utcTime(a.since_utc_ns) + " [" + liveClassWords(a) + "; others kept waiting " + fmt::percent(a.effect) +
         " of their time, confidence " + fmt::fixed(a.confidence, 2) + "]";
}

std::string dropLine(const RunModel& run, const DropAlert& a) {
  const std::string who = whoWords(run, a.process);
  const std::string in_all = fmt::counted(a.lost_total, "record") + " in all";
  if (a.kind == DropAlert::Kind::kRecovered)
    return "commtrace: RECOVERED " + who + " lost no records since " + fmt::utcTime(a.since_utc_ns) + " (" + std::to_string(a.lost) +
           " in that stretch, " + in_all + ")";
  return "commtrace: DROPS " + who + " lost " + fmt::counted(a.lost, "record") + " before its trace file since " + fmt::utcTime(a.since_utc_ns) +
         " (" + in_all + "; its rings were full or its file could not be written): its ops are missing from the report and the alerts while it lasts";
}

std::string hungOpWords(const RunModel& run, const HungOp& op) {
  const std::string func(run.name(op.func));
  if (op.peer < 0) return func + " #" + std::to_string(op.seq);
  return func + " #" + std::to_string(op.op_index) + (func == "Recv" ? " from " : " to ") + std::to_string(op.peer);
}

namespace {

// "rank 3", "ranks 0-6"; members with no file yet by their comm rank.
std::string membersWords(const RunModel& run, const std::vector<HangAlert::Member>& members) {
  std::vector<int> ranks, unseen;
  for (const HangAlert::Member& m : members) {
    if (m.process < 0) unseen.push_back(m.comm_rank);
    else ranks.push_back(run.processes[static_cast<size_t>(m.process)].rank);
  }
  std::sort(ranks.begin(), ranks.end());
  std::string out;
  if (!ranks.empty()) out = (ranks.size() == 1 ? "rank " : "ranks ") + fmt::rankList(ranks);
  if (!unseen.empty()) out += (out.empty() ? "" : ", ") + std::string(unseen.size() == 1 ? "comm rank " : "comm ranks ") + fmt::rankList(unseen);
  return out;
}

// Where a member not waiting in the op was last seen, in words that group equal members.
std::string whereWords(const RunModel& run, const HangAlert::Member& m) {
  std::string out;
  if (m.process < 0) out = "never seen (no trace file names it yet)";
  else if (!m.last) out = "never seen in an op of it";
  else out = (m.stuck ? "stuck in " : "last seen at ") + hungOpWords(run, *m.last);
  if (m.silent_s > 0) out += ", its file silent " + fmt::fixed(m.silent_s, 1) + " s (process gone or frozen)";
  return out;
}

}  // namespace

std::string hangLine(const RunModel& run, const HangAlert& a) {
  const std::string_view comm_name = run.name(a.comm_name);
  const std::string where = hungOpWords(run, a.op) + " on " + fmt::commLabel(a.comm_id, comm_name);
  const std::string waited = fmt::fixed(a.waited_s, 1) + " s";  // a hang is seconds long: tenths are enough
  if (a.kind == HangAlert::Kind::kRecovered) return "commtrace: RECOVERED " + where + " went on after " + waited;
  std::string line = "commtrace: HANG " + where + ": " + membersWords(run, a.waiting) + " waiting " + waited;
  if (a.others.empty()) return line + " (every member is in it: a GPU or the network does not progress)";
  std::vector<std::pair<std::string, std::vector<HangAlert::Member>>> groups;  // in comm-rank order of first member
  for (const HangAlert::Member& m : a.others) {
    const std::string words = whereWords(run, m);
    auto g = std::find_if(groups.begin(), groups.end(), [&](const auto& x) { return x.first == words; });
    if (g == groups.end()) g = groups.insert(groups.end(), {words, {}});
    g->second.push_back(m);
  }
  constexpr size_t kMaxGroups = 4;
  for (size_t i = 0; i < groups.size() && i < kMaxGroups; ++i) line += "; " + membersWords(run, groups[i].second) + " " + groups[i].first;
  if (groups.size() > kMaxGroups) line += "; and " + std::to_string(groups.size() - kMaxGroups) + " more groups of members";
  return line;
}

}  // namespace commtrace::report
