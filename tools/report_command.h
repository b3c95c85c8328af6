// `commtrace report` and `commtrace export --perfetto`: read a run directory (every rank's
// trace files), align its clocks, analyse it, and print the report or write the trace.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "tools/report/load/shard_window.h"
#include "tools/report/load/time_window.h"
#include "tools/report/report.h"
#include "tools/report/output/perfetto_export.h"

namespace commtrace::tools {

enum class ReportFormat { kText, kJson, kCsv, kHtml, kMarkdown, kFolded, kFoldedStacks };
enum class ProgressMode { kAuto, kAlways, kNever };  // auto: when stderr is a terminal

// How the processes of a parallel report (commtrace-mpi, tools/mpi/) hand their shards'
// states to the first: process rank() of size() reads shard rank() of size(); process 0
// merges every state and writes the report. No MPI here: the tools build without it.
class StateExchange {
 public:
  virtual ~StateExchange() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Every process's state in rank order into all, on process 0 (all is left empty on the
  // others); every process calls it, with an empty state where it could not read its shard.
  // false where the exchange itself failed. mine is taken: a state is hundreds of MB.
  virtual bool gather(std::string mine, std::vector<std::string>& all) = 0;
};

struct ReportOptions {
  std::vector<std::string> paths;  // run directories (read as trees) and trace files
  std::string job;  // when the files come from several jobs: which (report::kAllJobs: all as one run)
  ReportFormat format = ReportFormat::kText;
  std::string out;  // file (text, json, html, markdown, folded) or directory (csv); empty: stdout
  ProgressMode progress = ProgressMode::kAuto;
  report::StepRule step_rule;  // --step-range
  report::TimeWindowSpec window;  // --from, --to
  // --shard, --state: write the state of this shard of the run (the whole run: shard 0 of 1)
  // to this file instead of a report; `commtrace merge` reports the states of every shard.
  report::ShardSpec shard;
  std::string state;
  StateExchange* exchange = nullptr;  // a parallel report: this process's part (none: read the run alone)
};

struct ExportOptions {
  std::vector<std::string> paths;  // run directories (read as trees) and trace files
  std::string job;  // as ReportOptions::job
  std::string out;  // empty: perfettoPathFor(the first path, the encoding)
  report::PerfettoOptions perfetto;  // protobuf or JSON, and what to keep
  ProgressMode progress = ProgressMode::kAuto;
};

// Exit codes: 0 when the run was analysed (damaged or missing files included: the report
// lists them), 1 when nothing could be analysed or the output could not be written (the
// message on err says why), 2 for a usage error (csv without --out).
int runReport(const ReportOptions& options, std::ostream& out, std::ostream& err);
// The report of one run, built as runReport builds it; false (err says why) when nothing could be read.
bool analyseRun(const ReportOptions& options, report::Report& r, std::ostream& err);
// `commtrace merge STATE...`: the report of a run from its shards' states (options.paths),
// written as runReport writes it; the same exit codes.
int runMerge(const ReportOptions& options, std::ostream& out, std::ostream& err);
int runExport(const ExportOptions& options, std::ostream& out, std::ostream& err);

// Where export writes by default: next to the run directory, "DIR.perfetto-trace" (protobuf)
// or "DIR.perfetto.json", plus ".gz" when gzipped (not inside it, so that the run directory
// keeps only what the job wrote).
std::string perfettoPathFor(const std::string& dir, const report::PerfettoOptions& options);

}  // namespace commtrace::tools
