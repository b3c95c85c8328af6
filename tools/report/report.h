// The results of `commtrace report`, gathered: what the analyses compute from a RunModel
// (each declares its rows beside it, analyses/*_rows.h) and what the text, JSON, CSV and
// HTML writers print. Plain data, no behaviour.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tools/report/advice_rows.h"
#include "tools/report/analyses/bandwidth_rows.h"
#include "tools/report/analyses/bandwidth_series_rows.h"
#include "tools/report/analyses/comm_matrix_rows.h"
#include "tools/report/analyses/cuda_sync_rows.h"
#include "tools/report/analyses/findings_rows.h"
#include "tools/report/analyses/kernel_breakdown_rows.h"
#include "tools/report/analyses/lateness_heatmap_rows.h"
#include "tools/report/analyses/mismatches_rows.h"
#include "tools/report/analyses/overlap_rows.h"
#include "tools/report/analyses/parallelism_rows.h"
#include "tools/report/analyses/peer_waits_rows.h"
#include "tools/report/analyses/rank_traffic_rows.h"
#include "tools/report/analyses/call_paths_rows.h"
#include "tools/report/analyses/call_stacks_rows.h"
#include "tools/report/analyses/slow_links_rows.h"
#include "tools/report/analyses/stragglers_rows.h"
#include "tools/report/load/clock_summary.h"
#include "tools/report/load/run_summary_rows.h"

namespace commtrace::report {

struct Report {
  RunSummary run;
  ClockSummary clocks;
  std::vector<CommunicatorRow> communicators;
  std::vector<BandwidthRow> bandwidth;
  BandwidthSeries bandwidth_series;
  CommMatrix matrix;
  std::vector<RankTrafficRow> rank_traffic;  // most bytes first
  std::vector<OverlapRow> overlap;
  KernelBreakdown kernels;
  std::vector<PeerWaitRow> peer_waits;  // most wait first
  std::vector<CudaSyncRow> cuda_sync;  // processes with CUDA sync calls, in process order
  std::vector<CallPathRow> call_paths;  // communication by NVTX path, most time first
  std::vector<CallStackRow> call_stacks;  // sampled ops by native call stack, most ops first
  std::vector<std::string> call_stack_notes;  // modules whose frames could not be named here, and why
  StragglerReport stragglers;
  std::vector<MismatchRow> mismatches;
  uint64_t mismatches_total = 0;  // mismatches may be capped in the list; this is the full count
  uint64_t collectives_lost_to_drops = 0;  // collective instances missing a member whose process dropped records
  // One sentence each: what makes the rest incomplete (no op in the window, ranks dead or
  // hung, lost data, mismatches), then every culprit, then the costs, then what could not be
  // decided (build_report.cc); finding_details holds the same, each with its fields.
  std::vector<std::string> findings;
  std::vector<FindingRow> finding_details;
  std::vector<ParallelismRow> parallelism;
  std::vector<AdviceRow> advice;
};

}  // namespace commtrace::report
