#include "tools/report/finding_words.h"

#include <cmath>
#include <cstdarg>
#include <cstdio>

#include "tools/report/analyses/slow_links.h"
#include "tools/report/analyses/stragglers.h"
#include "tools/report/evidence_words.h"
#include "tools/report/format.h"

namespace commtrace::report {
namespace {

std::string sentence(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string sentence(const char* format, ...) {
  va_list args, again;
  va_start(args, format);
  va_copy(again, args);
  std::string out(static_cast<size_t>(std::max(0, std::vsnprintf(nullptr, 0, format, args))), '\0');
  std::vsnprintf(out.data(), out.size() + 1, format, again);
  va_end(again);
  va_end(args);
  return out;
}

using ULL = unsigned long long;

// The share of a path's time spent waiting in its ops for a late peer from which the
// exposed-communication finding says so (below it, the waits are a peer's ordinary jitter).
constexpr double kWaitWorthSaying = 0.25;

// ", X per step of S (P of whose)", where the row has a cost per step.
std::string perStep(const FindingRow& row, double step_us, const char* whose) {
  if (std::isnan(row.cost_per_step_us)) return "";
  return ", " + fmt::duration(row.cost_per_step_us) + " per step of " + fmt::duration(step_us) + " (" + fmt::percent(row.cost_share) +
         " of " + whose + ")";
}

// " slows every step by about X (P of its S)": what fixing the culprit saves.
std::string stepSaved(const FindingRow& row, const JobSteps& steps) {
  if (std::isnan(row.step_saved_share)) return " (what fixing it would save was not estimated: it was never among the costliest origins replayed)";
  if (std::isnan(row.step_saved_us))
    return sentence(" slows the run by about %s (estimated by replaying it without its delays)", fmt::percent(row.step_saved_share).c_str());
  return sentence(" slows every step by about %s (%s of its %s; estimated by replaying the run without its delays)",
                  fmt::duration(row.step_saved_us).c_str(), fmt::percent(row.step_saved_share).c_str(), fmt::duration(steps.mean_step_us).c_str());
}

// The waiting a culprit's delays caused, in rank-time: "X of the others' time in all, Y per
// step of S (P of their time)".
std::string rankTime(double wait_us, const JobSteps& steps, const FindingRow& row) {
  return fmt::duration(wait_us) + " of the others' time in all" + perStep(row, steps.mean_step_us, "their time");
}

std::string whenWords(const facts::LateWhen& when) {
  if (when.stretches.empty()) return "";
  if (when.throughout) return ", throughout the run";
  constexpr size_t kNamed = 3;
  std::string out = ", late";
  for (size_t i = 0; i < when.stretches.size() && i < kNamed; ++i)
    out += std::string(i == 0 ? "" : " and") + " from +" + fmt::duration(when.stretches[i].from_us) + " to +" + fmt::duration(when.stretches[i].to_us);
  if (when.stretches.size() > kNamed) out += " and in " + std::to_string(when.stretches.size() - kNamed) + " more stretches";
  return out + " on the aligned timeline";
}

// What would tell the links apart: NCCL's proxy steps, or, where they were recorded and still
// timed no link (it was suggested to a run that held 38,400 of them), why not.
std::string proxyHint(uint64_t proxy_steps) {
  if (proxy_steps == 0) return "recording NCCL's proxy steps (COMMTRACE_PROXY_EVENTS=1) times each link's sends on the wire";
  return "the run's " + std::to_string(proxy_steps) +
         " proxy steps timed none of these links on the wire (sends of 64 KiB or more with the time their SendWait state began, "
         "longer than 1 us, are needed: an NCCL that reports its states at once, or small messages, give none)";
}

// " (rank 0: 11876, rank 3: 12)": the three that dropped most.
std::string dropsWords(const std::vector<std::pair<int, uint64_t>>& drops) {
  constexpr size_t kNamed = 3;
  std::string out;
  for (size_t i = 0; i < drops.size() && i < kNamed; ++i)
    out += std::string(i == 0 ? " (" : ", ") + "rank " + std::to_string(drops[i].first) + ": " + std::to_string(drops[i].second);
  if (drops.size() > kNamed) out += " and " + std::to_string(drops.size() - kNamed) + " more ranks";
  return out.empty() ? out : out + ")";
}

// Open files changed after their writer stopped: not a process's end but the file's.
std::string cutShort(const RunSummary& run) {
  const int n = run.files_cut_short;
  if (n == 0) return "";
  return " " + std::to_string(n) + (n == 1 ? " of them was" : " of them were") +
         " modified well after the last chunk it holds was written: cut short or changed after its writer stopped (a copy gone "
         "wrong, a full disk), whatever became of the process.";
}

// Files of processes whose _exit the library could not see, which end unclosed without a kill.
std::string exitUnseen(const RunSummary& run) {
  const int n = run.files_left_open_exit_unseen;
  if (n == 0) return "";
  return " " + std::to_string(n) + (n == 1 ? " of them was" : " of them were") +
         " written by the library loaded as NCCL's plugin only, which cannot see a process leave through _exit: one that "
         "leaves so (forked workers do) without finalizing its communicators ends like this and loses what it recorded "
         "since its last flush. Preload libcommtrace.so (LD_PRELOAD) to record such processes to their end.";
}

struct Words {
  const FindingRow& row;

  std::string operator()(const facts::EmptyWindow& f) const {
    std::string found = "No op started in the --from/--to window";
    if (f.last_op_utc_ns != 0) found += "; the run's ops ran from " + fmt::utcTime(f.first_op_utc_ns) + " to " + fmt::utcTime(f.last_op_utc_ns);
    return found + ".";
  }

  std::string operator()(const facts::RunLoss& f) const {
    const RunSummary& run = *f.run;
    if (row.kind == "left_open")
      return "Left open: " + fmt::processesOf(run.ranks_left_open) + " stopped writing their trace files without closing them (last written " +
             fmt::utcTime(run.left_open_last_written_utc_ns) + "): the process was killed, crashed, hangs or idles." + cutShort(run) +
             exitUnseen(run);
    if (row.kind == "still_written") {
      std::string live = "Live: " + std::to_string(run.files_being_written) + " of " + std::to_string(run.processes) +
                         " trace files are still being written; the report covers what they held when read";
      if (run.all_files_reach_utc_ns != 0) live += ", every file reaching " + fmt::utcTime(run.all_files_reach_utc_ns);
      return live + ". Ops after that may not be in every file yet and are not counted as mismatches.";
    }
    if (row.kind == "missing_ranks") return "Missing: no trace file for rank(s) " + fmt::rankList(run.missing_ranks) + "; the report covers the others.";
    if (row.kind == "damaged_files")
      return sentence("Damaged: %d of %d trace files had unreadable parts; what could be read is included.", run.damaged_files, run.processes);
    if (row.kind == "skipped_files")
      return sentence("Skipped: %d %s in the run directory (see problems).", run.files - run.processes,
                      run.files - run.processes == 1 ? "file is not a readable commtrace trace" : "files are not readable commtrace traces");
    return sentence("Incomplete: %llu records were dropped before reaching the files%s%s and %llu NCCL events were not followed; "
                    "counts and sums are lower bounds, and ops of those ranks other ranks recorded read as mismatches that say so.",
                    static_cast<ULL>(run.dropped_records), dropsWords(f.drops).c_str(),
                    f.collectives_lost == 0 ? "" : sentence(", %llu collective instances missing a member for it", static_cast<ULL>(f.collectives_lost)).c_str(),
                    static_cast<ULL>(run.untracked_events));
  }

  std::string operator()(const facts::Mismatch& f) const {
    const MismatchRow& m = *f.first;
    std::string ranks;
    for (int rank : m.missing_ranks) ranks += (ranks.empty() ? "" : ", ") + std::to_string(rank);
    return sentence("Mismatches and hangs: %llu findings of ops not recorded by every member or never finished; "
                    "first: %s #%llu on %s, %s on %s %s (%s).",
                    static_cast<ULL>(f.total), m.func.c_str(), static_cast<ULL>(m.seq), fmt::commLabel(m.comm, m.comm_name).c_str(),
                    m.kind.c_str(), m.comm_ranks ? "comm rank(s)" : "rank(s)", ranks.c_str(), mismatchDetail(m).c_str());
  }

  std::string operator()(const facts::LinksNotToldApart& f) const {
    const std::string gbs = fmt::gbs(f.achieved_gbs);
    return sentence("Links inside rings: the %zu inter-host links measured were crossed only by collectives that crossed the others too, "
                    "and each reached %s at best. A ring runs at the pace of its slowest link, so whether one of them is slow cannot be "
                    "told from collective times: compare %s with what these hosts' network carries (nccl-tests' busBw); %s.",
                    f.links, gbs.c_str(), gbs.c_str(), proxyHint(f.proxy_steps).c_str());
  }

  std::string operator()(const facts::SlowHost& f) const {
    const HostStragglerRow& h = *f.host;
    return sentence("Straggler host: %s (rank(s) %s)%s: most of its ranks created delays that made the others wait, %s%s "
                    "(confidence %.2f of 1); no one rank of it caused most of that, so the host, not one rank, is the place to look.",
                    h.host.c_str(), fmt::rankList(h.ranks).c_str(), stepSaved(row, f.steps).c_str(),
                    rankTime(h.wait_caused_us, f.steps, row).c_str(), whenWords(f.when).c_str(), h.confidence);
  }

  std::string operator()(const facts::Straggler& f) const {
    const StragglerRow& r = *f.rank;
    return sentence("Straggler: rank %d (%s)%s. It created the delay in %s of its %llu synchronizations and its delays made the "
                    "others wait %s%s; cause: %s (confidence %.2f of 1). Evidence: %s.",
                    r.rank, r.host.c_str(), stepSaved(row, f.steps).c_str(), fmt::percent(r.late_fraction).c_str(), static_cast<ULL>(r.instances),
                    rankTime(r.wait_caused_us, f.steps, row).c_str(), whenWords(f.when).c_str(), r.cls.c_str(), r.confidence,
                    evidenceWords(r).c_str());
  }

  std::string operator()(const facts::NoStraggler& f) const {
    const StragglerRow& top = *f.top;
    // Last more often than chance, and still no straggler: its delays cost little. Said so,
    // not as if the last arriver changed from op to op.
    if (top.z >= kMinZ && top.median_wait_caused_us > 0)
      return sentence("No straggler: rank %d created the delay in %s of its %llu synchronizations, more often than chance (%s), "
                      "but the waiting that caused, %s, is %.1fx the typical rank's, not %.0fx: no rank's delays cost the others much.",
                      top.rank, fmt::percent(top.late_fraction).c_str(), static_cast<ULL>(top.instances),
                      fmt::percent(top.chance_fraction).c_str(), fmt::duration(top.wait_caused_us).c_str(),
                      top.wait_caused_us / top.median_wait_caused_us, kMinWaitRatio);
    return sentence("No straggler: no rank or host creates the delays others wait for (the rank whose delays caused the most "
                    "waiting, rank %d, created the delay in %s of its %llu synchronizations, where chance gives %s).",
                    top.rank, fmt::percent(top.late_fraction).c_str(), static_cast<ULL>(top.instances), fmt::percent(top.chance_fraction).c_str());
  }

  std::string operator()(const facts::SlowLink& f) const {
    const SlowLinkRow& l = *f.link;
    const char* kind = l.inter_host ? "inter-host" : "intra-host";
    if (judgedByWire(l))
      return sentence("Slow link: rank %d <-> rank %d (%s) carried its bytes at %s on the wire as NCCL's proxy timed its %llu "
                      "send steps, against a median of %s for %s links; every op crossing it ran at its pace (at best %s).",
                      l.a, l.b, l.hosts.c_str(), fmt::gbs(l.wire_gbs).c_str(), static_cast<ULL>(l.wire_steps),
                      fmt::gbs(l.wire_median_gbs).c_str(), kind, fmt::gbs(l.achieved_gbs).c_str());
    return sentence("Slow link: rank %d <-> rank %d (%s) reached at best %s over %llu ops, against a median of %s for %s links.", l.a, l.b,
                    l.hosts.c_str(), fmt::gbs(l.achieved_gbs).c_str(), static_cast<ULL>(l.ops), fmt::gbs(l.peer_median_gbs).c_str(), kind);
  }

  std::string operator()(const facts::SlowLinkAmong& f) const {
    const SlowLinkRow& l = *f.links.front();
    return sentence("Slow link among %zu %s links (%s): each reached at best %s, against a median of %s; only the same "
                    "collectives crossed them, which run at the pace of their slowest link, so which of them is slow "
                    "cannot be told from their times; %s.",
                    f.links.size(), l.inter_host ? "inter-host" : "intra-host", linkPairs(f.links).c_str(), fmt::gbs(l.achieved_gbs).c_str(),
                    fmt::gbs(l.peer_median_gbs).c_str(), proxyHint(f.proxy_steps).c_str());
  }

  std::string operator()(const facts::Slowdown& f) const {
    return sentence("Slowdown: busBw of %s on %s fell from %s to %s from +%s on the aligned timeline (%llu of its %llu instances after it).",
                    f.row->func.c_str(), fmt::commLabel(f.row->comm, f.row->comm_name).c_str(), fmt::gbs(f.drop.before_gbs).c_str(),
                    fmt::gbs(f.drop.after_gbs).c_str(), fmt::duration(f.drop.at_us).c_str(), static_cast<ULL>(f.drop.ops_after),
                    static_cast<ULL>(f.drop.ops));
  }

  std::string operator()(const facts::Exposed& f) const {
    const OverlapRow& w = *f.rank;
    std::string words =
        sentence("Exposed communication: rank %d spends %s in communication kernels, %s of it (%s) not hidden behind compute%s.", w.rank,
                 fmt::duration(w.comm_us).c_str(), fmt::duration(w.exposed_us).c_str(),
                 fmt::percent(w.comm_us > 0 ? w.exposed_us / w.comm_us : 0.0).c_str(), perStep(row, w.mean_step_us, "its time").c_str());
    const CallPathRow& p = f.path.row;
    if (p.path.empty()) return words;
    words += sentence(" Over all ranks, the ops issued under NVTX path %s are %s exposed (%s of %s), %s of all the exposed time.",
                      p.path.c_str(), fmt::percent(p.exposed_share).c_str(), fmt::duration(p.exposed_us).c_str(),
                      fmt::duration(p.comm_us).c_str(), fmt::percent(f.path.exposed_of_all).c_str());
    // Waiting in them is a late peer's doing: hiding or speeding up these ops would not fix it.
    if (!p.waited_known || p.comm_us <= 0 || p.waited_us < kWaitWorthSaying * p.comm_us) return words;
    return words + sentence(" %s of their time (%s) was waiting for a late peer rather than moving data: the culprits' delays, not these ops.",
                            fmt::percent(p.waited_us / p.comm_us).c_str(), fmt::duration(p.waited_us).c_str());
  }

  std::string operator()(const facts::OverlapUnavailable& f) const {
    return "Overlap of communication with compute: not available (" + f.reason + ").";
  }

  std::string operator()(const facts::PipelineBubble& f) const {
    const PeerWaitRow& top = *f.ranks.front();
    if (f.ranks.size() == 1)
      return sentence("Pipeline bubble: rank %d waited for rank %d in %llu of %llu sends and receives, %s in all: %s per step, %s of its step.",
                      top.rank, top.peer, static_cast<ULL>(top.waited), static_cast<ULL>(top.transfers), fmt::duration(top.wait_us).c_str(),
                      fmt::duration(top.wait_per_step_us).c_str(), fmt::percent(top.step_share_pct / 100).c_str());
    std::string pairs;
    for (size_t i = 0; i < f.ranks.size(); ++i)
      pairs += sentence("%srank %d for rank %d", i == 0 ? "" : i + 1 == f.ranks.size() ? " and " : ", ", f.ranks[i]->rank, f.ranks[i]->peer);
    return sentence("Pipeline bubble: %zu ranks waited about as long on a peer in sends and receives, the pipeline's shape rather than "
                    "one pair's doing (%s): up to %s per step, %s of the step.",
                    f.ranks.size(), pairs.c_str(), fmt::duration(top.wait_per_step_us).c_str(), fmt::percent(top.step_share_pct / 100).c_str());
  }

  std::string operator()(const facts::CudaSync& f) const {
    const CudaSyncCallRow& top = f.most->calls.front();
    std::string out = sentence("CPU blocked in CUDA synchronisation: rank %d the longest, %s in %llu calls (%s of it in %s)%s", f.most->rank,
                               fmt::duration(f.most->blocked_us).c_str(), static_cast<ULL>(f.calls), fmt::duration(top.stats.total_us).c_str(),
                               top.call.c_str(), perStep(row, f.step_us, "its time").c_str());
    if (f.least != nullptr) out += sentence("; rank %d the shortest, %s", f.least->rank, fmt::duration(f.least->blocked_us).c_str());
    return out + ".";
  }

  std::string operator()(const facts::LowestBandwidth& f) const {
    const BandwidthRow& w = *f.row;
    // Point-to-point rows have no algorithm or protocol.
    const std::string how = w.algo.empty() ? "" : ", " + w.algo + "/" + w.proto;
    return sentence("Lowest bandwidth: %s on %s (%s%s): busBw %s at p50 over %llu instances (p50 time %s).", w.func.c_str(),
                    fmt::commLabel(w.comm, w.comm_name).c_str(), w.bucket.c_str(), how.c_str(), fmt::gbs(w.busbw_gbs_p50).c_str(),
                    static_cast<ULL>(w.count), fmt::duration(w.time_us_p50).c_str());
  }
};

}  // namespace

std::string mismatchDetail(const MismatchRow& m) {
  using Why = MismatchRow::Why;
  const std::string op = m.transfer ? std::string(m.send ? "send" : "receive") + " #" + std::to_string(m.op_index) + " of c" +
                                          std::to_string(m.src) + " -> c" + std::to_string(m.dst)
                                    : "op index " + std::to_string(m.op_index);
  std::string out;
  switch (m.why) {
    case Why::kRecordedLater:
      out = m.transfer ? op + " never recorded although later ones were" : "recorded by the others but not by these ranks, which recorded later ops (" + op + ")";
      break;
    case Why::kUnfinished: out = m.transfer ? op + " started but never finished" : "started but never finished on these ranks (" + op + ")"; break;
    case Why::kNoFile: out = "no readable trace file recorded this member (missing, or damaged before its first op)"; break;
    case Why::kTraceStops: out = "its trace stops before " + op; break;
  }
  if (m.left_open_utc_ns != 0)
    out += "; its file was left open, last written " + fmt::utcTime(m.left_open_utc_ns) + ": the process was killed, crashed, hangs or idles";
  if (m.dropped_records != 0)
    out += "; " + std::string(m.missing_ranks.size() == 1 ? "its process" : "their processes") + " dropped " + std::to_string(m.dropped_records) +
           " records before the file (ring full or file unwritable): lost by the tracer, not skipped by the rank";
  return out;
}

std::string findingWords(const Finding& finding) { return std::visit(Words{finding.row}, finding.facts); }

}  // namespace commtrace::report
