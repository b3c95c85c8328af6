// The Report's rows, each kind declared once (row_schema.h): what the JSON writer prints for
// each element of its arrays, the CSV writer for each line, the text and HTML writers for
// each table row, and SCHEMA.md in its field tables.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tools/report/output/row_schema.h"
#include "tools/report/report.h"

namespace commtrace::report::rows {

// One step (or stretch of steps) of one process's overlap: the step's figures are known only
// where the process's are (OverlapRow::available).
struct OverlapStepRow {
  const OverlapRow& process;
  const StepOverlap& step;
};

const Fields<ClockFit>& clockFitFields();
const Fields<CommunicatorRow>& communicatorFields();
const Fields<BandwidthRow>& bandwidthFields();
const Fields<MatrixSlice>& matrixSliceFields();  // without its cells
const Fields<MatrixCell>& matrixCellFields();
const Fields<OverlapRow>& overlapFields();  // without kernel_clock and steps
const Fields<OverlapStepRow>& overlapStepFields();
const Fields<PeerWaitRow>& peerWaitFields();
const Fields<RankTrafficRow>& rankTrafficFields();
const Fields<CallPathRow>& callPathFields();
const Fields<CallStackRow>& callStackFields();
const Fields<KernelRow>& kernelFields();
const Fields<KernelTypeRow>& kernelTypeFields();
const Fields<CudaSyncRow>& cudaSyncFields();  // without its calls
const Fields<CudaSyncCallRow>& cudaSyncCallFields();  // without its streams
const Fields<CudaSyncStreamRow>& cudaSyncStreamFields();
const Fields<StragglerRow>& stragglerFields();
const Fields<HostStragglerRow>& hostStragglerFields();
const Fields<CommStragglerRow>& commStragglerFields();
const Fields<SlowLinkRow>& linkFields();
const Fields<MismatchRow>& mismatchFields();
const Fields<FindingRow>& findingFields();
const Fields<ParallelismRow>& parallelismFields();
const Fields<AdviceRow>& adviceFields();

// The field tables of declared rows that are not a section's list (those come with their
// section: ReportSection::fields_markdown), as SCHEMA.md holds them under a line
// "<!-- fields: SECTION -->" (the rows as SCHEMA.md names them: "matrix.slices[]").
struct SchemaTable {
  std::string_view section;
  std::string markdown;
};
std::vector<SchemaTable> schemaTables();

}  // namespace commtrace::report::rows
