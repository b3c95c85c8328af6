// What the report finds, decided from its tables: which findings there are, about whom, in
// what order, with which figures (what a culprit costs per step, what fixing it saves, when
// it was late). The words are a layer above (finding_words.h): nothing here is prose, so a
// finding's decision is tested apart from how it is said, and the figures in
// `finding_details` are the ones the sentence prints.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "tools/report/analyses/lateness_heatmap.h"
#include "tools/report/analyses/bandwidth_series.h"
#include "tools/report/analyses/call_paths.h"
#include "tools/report/report.h"
#include "tools/report/load/run_model.h"

namespace commtrace::report {

// The order a user must read findings in: what makes the rest incomplete or wrong first (a
// window with no op, dead or hung ranks, lost data, mismatches), then the culprits (every
// one), then what communication costs, and what could not be decided last.
enum class FindingTier : uint8_t { kWindow, kLoss, kCulprit, kCost, kNote };
const char* tierName(FindingTier tier);

// Every kind of finding (FindingRow::kind), as SCHEMA.md lists them.
inline constexpr std::array<const char*, 20> kFindingKinds = {
    "empty_window",    "left_open",       "still_written",      "missing_ranks",      "damaged_files",
    "skipped_files",   "dropped_records", "mismatch",           "slow_host",          "straggler",
    "slow_link",       "slow_link_among", "slowdown",           "exposed_communication", "pipeline_bubble",
    "cuda_sync",       "lowest_bandwidth", "no_straggler",      "overlap_unavailable", "links_not_told_apart"};

// The job's steps as the overlap table counts them: the median rank's count and mean length
// (ranks with two steps or more); what a finding costs per step is said against them.
struct JobSteps {
  double steps = 0;
  double mean_step_us = 0;
  int ranks = 0;
};
JobSteps jobSteps(const std::vector<OverlapRow>& rows, int ranks);

// What each kind of finding is about, as the words need it (rows of the report it was
// decided from: they outlive the findings).
namespace facts {
struct EmptyWindow { uint64_t first_op_utc_ns = 0, last_op_utc_ns = 0; };
struct RunLoss {  // left_open, still_written, missing_ranks, damaged_files, skipped_files, dropped_records
  const RunSummary* run = nullptr;
  std::vector<std::pair<int, uint64_t>> drops;  // (rank, records dropped), most first
  uint64_t collectives_lost = 0;
};
struct Mismatch { uint64_t total = 0; const MismatchRow* first = nullptr; };
// proxy_steps: NCCL's proxy steps the run recorded (COMMTRACE_PROXY_EVENTS), which time each
// link on the wire where they carry their states' times; 0 where not recorded.
struct LinksNotToldApart { size_t links = 0; double achieved_gbs = 0; uint64_t proxy_steps = 0; };
// When the culprit was late: its stretches on the aligned timeline, and whether they cover the run.
struct LateWhen { std::vector<TimeStretch> stretches; bool throughout = false; };
struct SlowHost { const HostStragglerRow* host = nullptr; JobSteps steps; int others = 0; LateWhen when; };
struct Straggler { const StragglerRow* rank = nullptr; JobSteps steps; LateWhen when; };
struct NoStraggler { const StragglerRow* top = nullptr; };
struct SlowLink { const SlowLinkRow* link = nullptr; };
struct SlowLinkAmong { std::vector<const SlowLinkRow*> links; uint64_t proxy_steps = 0; };
struct Slowdown { const BandwidthSeriesRow* row = nullptr; BandwidthDrop drop; };
struct Exposed {
  const OverlapRow* rank = nullptr;
  ExposedPath path;  // where in the program most exposed time was issued (empty: no NVTX paths)
};
struct OverlapUnavailable { std::string reason; };
// The rank that waited longest on a peer, and the others that waited about as long (within
// 10 %), the longest first: four equal waits are the pipeline's shape, not one pair's doing.
struct PipelineBubble { std::vector<const PeerWaitRow*> ranks; };
struct CudaSync { const CudaSyncRow* most = nullptr; const CudaSyncRow* least = nullptr; uint64_t calls = 0; double step_us = 0; };
struct LowestBandwidth { const BandwidthRow* row = nullptr; };
}  // namespace facts

using FindingFacts = std::variant<facts::EmptyWindow, facts::RunLoss, facts::Mismatch, facts::LinksNotToldApart, facts::SlowHost,
                                  facts::Straggler, facts::NoStraggler, facts::SlowLink, facts::SlowLinkAmong, facts::Slowdown,
                                  facts::Exposed, facts::OverlapUnavailable, facts::PipelineBubble, facts::CudaSync,
                                  facts::LowestBandwidth>;

struct Finding {
  FindingTier tier = FindingTier::kNote;
  FindingRow row;  // every field but `finding`, the sentence finding_words.h writes
  FindingFacts facts;
};

// "3 <-> 4, 5 <-> 6 and 2 more": the first kLinksNamed links' ranks (a subject, and the words').
constexpr size_t kLinksNamed = 8;
std::string linkPairs(const std::vector<const SlowLinkRow*>& links);

// The report's findings, in the order to read them (by tier, then as found). `report` holds
// every table but its findings and advice.
std::vector<Finding> findFindings(const Report& report, const RunModel& run);

}  // namespace commtrace::report
