#include "tools/report_command.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "tools/report/build_report.h"
#include "tools/report/load/clock_align.h"
#include "tools/report/load/run_loader.h"
#include "tools/report/output/csv_report.h"
#include "tools/report/output/html_report.h"
#include "tools/report/output/json_report.h"
#include "tools/report/output/perfetto_export.h"
#include "tools/report/output/text_report.h"

namespace commtrace::tools {
namespace {

using report::Report;
using report::RunModel;

bool showProgress(ProgressMode mode) {
  return mode == ProgressMode::kAlways || (mode == ProgressMode::kAuto && isatty(STDERR_FILENO) == 1);
}

// stream: where the report's analyses take the collectives from, so that the run does not
// keep them; export draws every op and keeps them.
// steps: the report's step rule, under which only the NVTX ranges that can be steps are
// kept; nullptr (the export, which draws them) keeps them all.
template <class Options>
bool load(const Options& options, RunModel& run, std::ostream& err, report::JoinedOpSink* stream = nullptr,
          const report::TimeWindowSpec& window = {}, const report::StepRule* steps = nullptr) {
  report::LoadOptions load{.paths = options.paths,
                           .progress = showProgress(options.progress),
                           .job = options.job,
                           .stream = stream,
                           .keep_ops = stream == nullptr,
                           .window = window,
                           .keep_all_phases = steps == nullptr,
                           .step_range = {},
                           .keep_compute = stream == nullptr};
  if (steps != nullptr && steps->set()) load.step_range = [steps](std::string_view name) { return steps->matches(name); };
  return report::loadRun(load, run, err);
}

void writeTo(const Report& r, ReportFormat format, std::ostream& out) {
  switch (format) {
    case ReportFormat::kText: return report::writeText(r, out);
    case ReportFormat::kJson: return report::writeJson(r, out);
    case ReportFormat::kHtml: return report::writeHtml(r, out);
    case ReportFormat::kCsv: break;  // a directory, not a stream
  }
}

bool writeReport(const Report& r, const ReportOptions& options, std::ostream& out, std::ostream& err) {
  if (options.format == ReportFormat::kCsv) {
    if (!report::writeCsv(r, options.out, err)) return false;
    out << "Wrote the report's tables to " << options.out << "/ (one CSV file per table)\n";
    return true;
  }
  if (options.out.empty()) {
    writeTo(r, options.format, out);
    return true;
  }
  std::ofstream file(options.out, std::ios::binary | std::ios::trunc);
  if (file) writeTo(r, options.format, file);
  file.close();
  if (!file) {
    err << "commtrace: " << options.out << ": cannot write the report there\n";
    return false;
  }
  out << "Wrote " << options.out << '\n';
  return true;
}

}  // namespace

bool analyseRun(const ReportOptions& options, Report& r, std::ostream& err) {
  RunModel run;
  report::StreamedAnalyses streamed;
  streamed.arrivals.knowHosts(run);  // a slow host is a candidate to replay as one
  if (!load(options, run, err, &streamed, options.window, &options.step_rule)) return false;  // the loader said why
  uint64_t bytes = 0;
  for (const report::ProcessInfo& p : run.processes) bytes += p.file_bytes;
  report::ProgressLine progress(err, showProgress(options.progress), static_cast<int>(run.processes.size()), bytes,
                                "overlap: re-reading");
  r = report::buildReport(run, report::alignClocks(run, streamed.anchors), options.step_rule, streamed, &progress);
  return true;
}

int runReport(const ReportOptions& options, std::ostream& out, std::ostream& err) {
  if (options.format == ReportFormat::kCsv && options.out.empty()) {
    err << "commtrace: --format csv writes one file per table: name the directory with --out DIR\n";
    return 2;
  }
  Report r;
  if (!analyseRun(options, r, err)) return 1;
  const auto steps_from_nvtx = [](const report::OverlapRow& row) { return row.step_source == "nvtx"; };
  if (options.step_rule.set() && std::none_of(r.overlap.begin(), r.overlap.end(), steps_from_nvtx))
    err << "commtrace: --step-range '" << options.step_rule.range()
        << "' matches no NVTX range of this run: its steps are the ops' repeating period instead\n";
  if (!writeReport(r, options, out, err)) return 1;
  // The report says so among its findings; the exit status says so to a script.
  for (const report::FindingRow& f : r.finding_details)
    if (f.kind == "empty_window") {
      err << "commtrace: " << f.finding << " Nothing was analysed.\n";
      return 1;
    }
  return 0;
}

int runExport(const ExportOptions& options, std::ostream& out, std::ostream& err) {
  RunModel run;
  if (!load(options, run, err)) return 1;
  // The report lists them among its problems; the export has no such place but stderr.
  for (const std::string& why : run.skipped_files) err << why << " (left out of the export)\n";
  const report::TraceEncoding encoding = options.perfetto.encoding;
  const std::string path = options.out.empty() ? perfettoPathFor(options.paths.front(), options.perfetto) : options.out;
  report::PerfettoStats stats;
  if (!report::exportPerfetto(run, report::alignClocks(run), options.perfetto, path, err, &stats)) return 1;
  out << "Wrote " << path << ": " << stats.slices << " slices on " << stats.tracks << " tracks of " << stats.processes << " of "
      << run.processes.size() << " processes";
  if (encoding == report::TraceEncoding::kProtobuf) out << ", " << stats.flows << " ops joined across ranks by flow arrows";
  out << '\n';
  if (stats.slices_filtered_out > 0) out << "  " << stats.slices_filtered_out << " slices left out by --ranks, --steps, --from or --to\n";
  if (stats.processes_without_steps > 0)
    out << "  " << stats.processes_without_steps
        << " processes have none of the steps asked for (they have fewer steps, or none was found: no repeating ops or NVTX steps)\n";
  if (stats.processes_not_aligned > 0)
    out << "  " << stats.processes_not_aligned << " processes could not be aligned: their times count from their own earliest event\n";
  if (stats.ops_without_gpu_times > 0) out << "  " << stats.ops_without_gpu_times << " ops had no GPU times and are not drawn\n";
  if (stats.slices == 0) {  // a selection that matches nothing is an answer a script must not take for a trace
    err << "commtrace: nothing was kept: --ranks, --steps, --from or --to select no slice of the run; " << path << " is empty\n";
    return 1;
  }
  out << (encoding == report::TraceEncoding::kProtobuf
              ? "Open it in the Perfetto UI (ui.perfetto.dev, \"Open trace file\") or query it with trace_processor.\n"
              : "Open it in the Perfetto UI (ui.perfetto.dev, \"Open trace file\") or chrome://tracing.\n");
  return 0;
}

std::string perfettoPathFor(const std::string& dir, const report::PerfettoOptions& options) {
  std::filesystem::path p = std::filesystem::absolute(dir).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();  // "runs/job7/" names "job7"
  return p.string() + (options.encoding == report::TraceEncoding::kProtobuf ? ".perfetto-trace" : ".perfetto.json") +
         (options.gzip ? ".gz" : "");
}

}  // namespace commtrace::tools
