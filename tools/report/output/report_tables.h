// The Report's tables as people read them (sizes in KiB/MiB, durations with units, rank
// lists collapsed), for the sections' page parts (page_parts.cc) where a table is more than
// its rows' declaration: a pick of rows, rows under rows, notes on what a mark means.
#pragma once

#include <utility>

#include "tools/report/output/page.h"
#include "tools/report/output/table.h"
#include "tools/report/report.h"

namespace commtrace::report::tables {

// The run in a few "name: value" lines: files, ranks, ops, missing ranks, losses, clocks.
using Fields = PageFields;
Fields runFields(const Report& report);

Table clocks(const ClockSummary& clocks);
Table communicators(const std::vector<CommunicatorRow>& rows);
// Rows without bandwidth show "-", approximate percentiles a leading "~"; bandwidthNotes says
// what each mark means, each distinct reason once.
Table bandwidth(const std::vector<BandwidthRow>& rows);
std::vector<std::string> bandwidthNotes(const std::vector<BandwidthRow>& rows);
Table stragglers(const std::vector<StragglerRow>& rows);  // in the Report's order: by wait caused, most first
Table stragglerHosts(const std::vector<HostStragglerRow>& rows);
Table stragglerComms(const std::vector<CommStragglerRow>& rows);
Table links(const std::vector<SlowLinkRow>& rows);
// What the confidence column of each table means, for a note under it.
std::string stragglerConfidenceNote();
std::string linkConfidenceNote();
Table heaviestPairs(const CommMatrix& matrix);  // the whole-run slice, most bytes first
Table mismatches(const std::vector<MismatchRow>& rows);
// Rows without compute records show "-" for what was not measured; unavailableReasons
// lists each distinct reason once, for a note under the table.
Table overlap(const std::vector<OverlapRow>& rows);
std::vector<std::string> unavailableReasons(const std::vector<OverlapRow>& rows);
// One line naming the ranks whose overlap is approximate (OverlapRow::out_of_order); "" when none.
std::string outOfOrderNote(const std::vector<OverlapRow>& rows);
// One line on how CUPTI's clock was tied to the GPU's; "" when no rank needed it.
std::string kernelClockNote(const std::vector<OverlapRow>& rows);
// The kernels with most GPU time (all ranks together, or each rank's), and each rank's time
// by HTA's kernel types.
Table kernels(const std::vector<KernelRow>& rows);
Table kernelTypes(const std::vector<KernelTypeRow>& rows);
// Per process and call; a call on several streams gets a row per stream under it.
Table cudaSync(const std::vector<CudaSyncRow>& rows);

std::string streamLabel(uint64_t stream);  // "legacy default", "per-thread default", else the hex handle

std::string clockLine(const ClockSummary& clocks);            // one sentence about alignment

}  // namespace commtrace::report::tables
