#include "tools/report_command.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "tools/cli_command.h"
#include "tools/cli_values.h"

#include "tools/report/build_report.h"
#include "tools/report/format.h"
#include "tools/report/load/clock_align.h"
#include "tools/report/load/run_loader.h"
#include "tools/report/output/csv_report.h"
#include "tools/report/output/folded_report.h"
#include "tools/report/output/html_report.h"
#include "tools/report/output/json_report.h"
#include "tools/report/output/markdown_report.h"
#include "tools/report/output/perfetto_export.h"
#include "tools/report/output/text_report.h"
#include "tools/report/shard/shard_state.h"

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
          const report::TimeWindowSpec& window = {}, const report::StepRule* steps = nullptr, report::ShardSpec shard = {}) {
  report::LoadOptions load{.paths = options.paths,
                           .progress = showProgress(options.progress),
                           .job = options.job,
                           .stream = stream,
                           .keep_ops = stream == nullptr,
                           .window = window,
                           .keep_all_phases = steps == nullptr,
                           .step_range = {},
                           .keep_compute = stream == nullptr,
                           .shard = shard};
  if (steps != nullptr && steps->set()) load.step_range = [steps](std::string_view name) { return steps->matches(name); };
  return report::loadRun(load, run, err);
}

void writeTo(const Report& r, ReportFormat format, std::ostream& out) {
  switch (format) {
    case ReportFormat::kText: return report::writeText(r, out);
    case ReportFormat::kJson: return report::writeJson(r, out);
    case ReportFormat::kHtml: return report::writeHtml(r, out);
    case ReportFormat::kMarkdown: return report::writeMarkdown(r, out);
    case ReportFormat::kFolded: return report::writeFolded(r, out);
    case ReportFormat::kFoldedStacks: return report::writeFoldedStacks(r, out);
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

namespace {

bool csvWithoutDirectory(const ReportOptions& options, std::ostream& err) {
  if (options.format != ReportFormat::kCsv || !options.out.empty()) return false;
  err << "commtrace: --format csv writes one file per table: name the directory with --out DIR\n";
  return true;
}

// What the report alone cannot say, on err, then the report; the exit status.
int deliverReport(const Report& r, const ReportOptions& options, std::ostream& out, std::ostream& err) {
  const auto steps_from_nvtx = [](const report::OverlapRow& row) { return row.step_source == "nvtx"; };
  if (options.step_rule.set() && std::none_of(r.overlap.begin(), r.overlap.end(), steps_from_nvtx))
    err << "commtrace: --step-range '" << options.step_rule.range()
        << "' matches no NVTX range of this run: its steps are the ops' repeating period instead\n";
  if (options.format == ReportFormat::kFolded && r.call_paths.empty())
    err << "commtrace: no op of this run was issued under an NVTX range: there are no stacks to fold "
           "(ranges come from torch.cuda.nvtx, emit_nvtx or the program's own NVTX calls; COMMTRACE_NVTX=0 turns them off)\n";
  else if (options.format == ReportFormat::kFolded)
    err << "commtrace: the stacks' values are " << report::foldedMeasure(r) << " time in microseconds, summed over ranks\n";
  if (options.format == ReportFormat::kFoldedStacks && r.call_stacks.empty())
    err << "commtrace: no call stack of this run was sampled: there are no stacks to fold (the NCCL wrappers sample them "
           "under LD_PRELOAD=libcommtrace.so; COMMTRACE_STACKS=0 turns them off)\n";
  else if (options.format == ReportFormat::kFoldedStacks)
    err << "commtrace: the stacks' values are the ops issued from them, estimated from the samples, summed over ranks\n";
  if (!writeReport(r, options, out, err)) return 1;
  // The report says so among its findings; the exit status says so to a script.
  for (const report::FindingRow& f : r.finding_details)
    if (f.kind == "empty_window") {
      err << "commtrace: " << f.finding << " Nothing was analysed.\n";
      return 1;
    }
  return 0;
}

// Reads options.shard of the run and writes its state to out; the stretch of time it covers
// into what (for people). false where nothing could be read (err says why).
bool readShard(const ReportOptions& options, std::ostream& out, std::string& what, std::ostream& err) {
  RunModel run;
  report::StreamedAnalyses streamed;
  streamed.arrivals.knowHosts(run);
  streamed.gateCallPieces(run);
  if (!load(options, run, err, &streamed, {}, &options.step_rule, options.shard)) return false;
  if (!report::writeShardState(out, run, streamed, options.step_rule.range(), err)) return false;
  what = "shard " + std::to_string(options.shard.shard) + " of " + std::to_string(options.shard.shards);
  if (run.window.sharded())
    what += " (ops from " + (run.window.from_utc_ns == 0 ? "the start" : report::fmt::utcTime(run.window.from_utc_ns)) + " to " +
            (run.window.to_utc_ns == UINT64_MAX ? "the end" : report::fmt::utcTime(run.window.to_utc_ns)) + ")";
  return true;
}

int writeShard(const ReportOptions& options, std::ostream& out, std::ostream& err) {
  std::ofstream file(options.state, std::ios::binary | std::ios::trunc);
  if (!file) {
    err << "commtrace: " << options.state << ": cannot write the state there\n";
    return 1;
  }
  std::string what;
  if (!readShard(options, file, what, err)) return 1;
  out << "Wrote " << options.state << ": the state of " << what << "; `commtrace merge` reports the states of all "
      << options.shard.shards << " shards\n";
  return 0;
}

// The report of merged states, written as runReport writes it.
int reportMerged(const std::vector<report::ShardSource>& sources, const ReportOptions& options, std::ostream& out, std::ostream& err) {
  const auto merged = std::make_unique<report::MergedRun>();
  if (!report::mergeShardStates(sources, *merged, err)) return 1;
  ReportOptions merged_options = options;
  if (!stepRuleFrom(merged->step_range, merged_options.step_rule)) return 1;
  const RunModel& run = merged->run;
  uint64_t bytes = 0;
  for (const report::ProcessInfo& p : run.processes) bytes += p.file_bytes;
  report::ProgressLine progress(err, showProgress(options.progress), static_cast<int>(run.processes.size()), bytes,
                                "overlap: re-reading");
  const Report r = report::buildReport(run, report::alignClocks(run, merged->analyses.anchors), merged_options.step_rule,
                                       merged->analyses, &progress);
  return deliverReport(r, merged_options, out, err);
}

// Process rank of a parallel report reads shard rank and sends its state to process 0,
// which reports them merged. Every process takes part in the exchange, failed or not, so
// that none waits for ever.
int reportInParallel(const ReportOptions& options, std::ostream& out, std::ostream& err) {
  StateExchange& exchange = *options.exchange;
  ReportOptions shard = options;
  shard.shard = {.shard = exchange.rank(), .shards = exchange.size()};
  std::ostringstream state;
  std::string what;
  const bool read = readShard(shard, state, what, err);
  std::vector<std::string> states;
  if (!exchange.gather(read ? std::move(state).str() : std::string(), states)) {
    err << "commtrace: process " << exchange.rank() << " of the parallel report could not exchange its state\n";
    return 1;
  }
  if (exchange.rank() != 0) return read ? 0 : 1;
  std::vector<report::ShardSource> sources;
  for (size_t i = 0; i < states.size(); ++i) {
    if (states[i].empty()) {
      err << "commtrace: process " << i << " could not read its shard (its own message says why); no report\n";
      return 1;
    }
    sources.push_back(report::shardBuffer("the state of process " + std::to_string(i), states[i]));
  }
  return reportMerged(sources, options, out, err);
}

}  // namespace

int runReport(const ReportOptions& options, std::ostream& out, std::ostream& err) {
  if (!options.state.empty()) return writeShard(options, out, err);
  if (csvWithoutDirectory(options, err)) return 2;
  if (options.exchange != nullptr) return reportInParallel(options, out, err);
  Report r;
  if (!analyseRun(options, r, err)) return 1;
  return deliverReport(r, options, out, err);
}

int runMerge(const ReportOptions& options, std::ostream& out, std::ostream& err) {
  if (csvWithoutDirectory(options, err)) return 2;
  std::vector<report::ShardSource> sources;
  for (const std::string& path : options.paths) sources.push_back(report::shardFile(path));
  return reportMerged(sources, options, out, err);
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

namespace {

const std::map<std::string, ReportFormat> kFormats = {
    {"text", ReportFormat::kText}, {"json", ReportFormat::kJson}, {"csv", ReportFormat::kCsv}, {"html", ReportFormat::kHtml},
    {"markdown", ReportFormat::kMarkdown}, {"folded", ReportFormat::kFolded},
    {"folded-stacks", ReportFormat::kFoldedStacks}};

const std::map<std::string, report::TraceEncoding> kTraceEncodings = {{"protobuf", report::TraceEncoding::kProtobuf},
                                                                      {"json", report::TraceEncoding::kJson}};

// `report --out r.html` without --format: the page, not text in a file named .html.
ReportFormat formatOfFile(const std::string& out, ReportFormat otherwise) {
  std::string ext = std::filesystem::path(out).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (ext == ".html" || ext == ".htm") return ReportFormat::kHtml;
  if (ext == ".json") return ReportFormat::kJson;
  if (ext == ".md" || ext == ".markdown") return ReportFormat::kMarkdown;
  if (ext == ".folded") return ReportFormat::kFolded;
  return otherwise;
}

// An option's time ("" where not given leaves it unset); false, with the reason, for a text
// that is not a time.
bool timePointFrom(const char* flag, const std::string& text, report::TimePoint& point) {
  if (text.empty()) return true;
  std::string error;
  const auto parsed = parseTimePoint(text, error);
  if (!parsed) {
    std::cerr << "commtrace: " << flag << " " << error << "\nRun 'commtrace report --help' for usage.\n";
    return false;
  }
  point = *parsed;
  return true;
}

// export's filters from their option texts ("" where not given); false, with the reason on
// stderr, for a text that is not a value.
bool parseExportFilter(const std::string& ranks, const std::string& steps, const std::string& from, const std::string& to,
                       report::ExportFilter& filter) {
  std::string error;
  bool ok = true;
  if (!ranks.empty()) ok = ok && (filter.ranks = parseRankList(ranks, error).value_or(std::vector<int>{})).size() > 0;
  if (ok && !steps.empty()) ok = (filter.steps = parseStepRange(steps, error)).has_value();
  if (ok && !from.empty()) ok = (filter.from_ns = parseDuration(from, error)).has_value();
  if (ok && !to.empty()) ok = (filter.to_ns = parseDuration(to, error)).has_value();
  if (ok && filter.from_ns && filter.to_ns && *filter.to_ns <= *filter.from_ns) {
    error = "--to " + to + " is not after --from " + from;
    ok = false;
  }
  if (!ok) std::cerr << "commtrace: " << error << "\nRun 'commtrace export --help' for usage.\n";
  return ok;
}

// --shard and --state: a shard's state instead of a report; false, with the reason on stderr,
// for a text that is no shard or options that do not go with them.
bool shardFrom(const std::string& text, ReportOptions& o, const CLI::App& report) {
  std::string error;
  if (!text.empty()) {
    const auto shard = parseShard(text, error);
    if (!shard) {
      std::cerr << "commtrace: --shard " << error << "\nRun 'commtrace report --help' for usage.\n";
      return false;
    }
    o.shard = *shard;
  }
  if (o.exchange != nullptr && (!text.empty() || !o.state.empty()))
    error = "each process of a parallel report reads its own shard: --shard and --state are for one process";
  else if (!text.empty() && o.state.empty()) error = "--shard writes the shard's state: name its file with --state FILE";
  else if (!o.state.empty() && o.window.set()) error = "--shard and --state read the whole run's time: --from and --to do not go with them";
  else if (!o.state.empty() && (report.get_option("--format")->count() > 0 || !o.out.empty()))
    error = "--state writes the shard's state, not a report: give --format and --out to `commtrace merge`";
  if (error.empty()) return true;
  std::cerr << "commtrace: " << error << "\nRun 'commtrace report --help' for usage.\n";
  return false;
}

}  // namespace

Command addReportCommand(CLI::App& app, StateExchange* exchange) {
  struct Flags {
    ReportOptions options;
    std::string format = "text", progress = "auto", step_range, from, to, shard;
  };
  const auto f = std::make_shared<Flags>();
  f->options.exchange = exchange;
  CLI::App* report = app.add_subcommand(
      "report", "Analyse a run (every rank's trace files, from directories and files): findings, bandwidth, matrix, stragglers, mismatches, overlap");
  report->footer(
      "The text report starts with the top findings (straggler, slow link, exposed communication, lowest bandwidth), then the "
      "run's summary (files, damaged files, missing ranks, dropped records, clock alignment), communicators, the bandwidth table "
      "(nccl-tests algBw/busBw), stragglers, links, the heaviest rank pairs of the communication matrix, mismatches and hangs, and "
      "compute/communication overlap. Long tables are cut; json, csv and html hold every row.\n"
      "Exit status: 0 when the run was analysed (damaged or missing files are reported in it), 1 when nothing could be analysed "
      "or the output could not be written, 2 for usage errors.");
  addRunOptions(report, f->options.paths, f->options.job, f->progress, f->step_range);
  addNamedOption(report, "--format", f->format, kFormats,
                 "text: a terminal summary; json: everything, schema commtrace.report.v1 (tools/report/SCHEMA.md); csv: one file "
                 "per table, needs --out DIR; html: one self-contained page with heatmaps and plots; markdown: the text report as "
                 "GitHub-flavoured Markdown (headings, pipe tables), for a pull request or a CI job's summary; folded: the "
                 "communication by NVTX path as folded stacks (path;path;path MICROSECONDS: its exposed time where every path's is "
                 "known, else its whole time), for flamegraph.pl, inferno or speedscope; folded-stacks: the sampled native call "
                 "stacks likewise (frame;frame;frame OPS: the ops issued from it, estimated from the samples)");
  report->add_option("--out", f->options.out,
                     "write to this file (text, json, html, markdown, folded, folded-stacks) or directory (csv) instead of stdout; without --format, a "
                     "file named .html, .htm, .json, .md or .folded is written in that format");
  report->add_option("--from", f->from,
                     "only the ops that started at or after this time: how long after the run's first process started "
                     "recording (90s, 2min), a UTC time (2026-11-27 06:31:02, as the report's 'time' line prints it), a "
                     "UTC time of day (06:31:02, on the day nearest the run's start), or where a step begins (step:100: the lowest rank's steps counted from 0 "
                     "as the overlap table counts them, its NVTX step ranges or else as its op sequence repeats). Kernel "
                     "totals still cover the whole run. A window that holds no op is said so, with exit status 1");
  report->add_option("--to", f->to, "only the ops that started before this time (as --from; --to step:N ends before step N)");
  report->add_option("--shard", f->shard,
                     "I/N: read only shard I of N (from 0), the run cut by time where the lowest rank's ops start, and write "
                     "its state to --state FILE instead of a report; run the N shards anywhere the files can be read (one "
                     "job per shard on a batch system), then `commtrace merge` their states into the report of the whole run. "
                     "Not with --from/--to");
  report->add_option("--state", f->options.state,
                     "write the state of the shard (--shard; without it, of the whole run as shard 0/1) to this file, for "
                     "`commtrace merge`, instead of a report");
  return {report, [f, report] {
            ReportOptions& o = f->options;
            o.format = kFormats.at(f->format);
            if (report->get_option("--format")->count() == 0) o.format = formatOfFile(o.out, o.format);
            o.progress = kProgressModes.at(f->progress);
            if (!stepRuleFrom(f->step_range, o.step_rule)) return 2;
            if (!timePointFrom("--from", f->from, o.window.from) || !timePointFrom("--to", f->to, o.window.to)) return 2;
            if (!shardFrom(f->shard, o, *report)) return 2;
            return runReport(o, std::cout, std::cerr);
          }};
}

Command addMergeCommand(CLI::App& app) {
  struct Flags {
    ReportOptions options;
    std::string format = "text", progress = "auto";
  };
  const auto f = std::make_shared<Flags>();
  CLI::App* merge = app.add_subcommand(
      "merge", "Report a run from the states of its shards (report --shard I/N --state FILE): the whole run's report, the root-cause walk's figures estimated");
  merge->footer(
      "The states must be every shard of one run, each once, read from the same files (the merge checks their names and "
      "sizes) with the same --step-range; they are merged in shard order whatever order they are given in. The run's "
      "files are read again for the overlap table, so they must be readable here too. A merged report is the whole run's "
      "but for what the root-cause walk passes back across a cut between shards (docs/report.md, 'Shards').\n"
      "Exit status: as report's.");
  merge->add_option("states", f->options.paths, "the state files, one per shard")->required();
  addProgressOption(merge, f->progress);
  addNamedOption(merge, "--format", f->format, kFormats, "as report's --format");
  merge->add_option("--out", f->options.out, "as report's --out");
  return {merge, [f, merge] {
            ReportOptions& o = f->options;
            o.format = kFormats.at(f->format);
            if (merge->get_option("--format")->count() == 0) o.format = formatOfFile(o.out, o.format);
            o.progress = kProgressModes.at(f->progress);
            return runMerge(o, std::cout, std::cerr);
          }};
}

Command addExportCommand(CLI::App& app) {
  struct Flags {
    ExportOptions options;
    std::string progress = "auto", format = "protobuf", compress = "gzip", step_range, ranks, steps, from, to;
    bool perfetto = false;  // the only export target so far, hence required
  };
  const auto f = std::make_shared<Flags>();
  CLI::App* export_cmd = app.add_subcommand("export", "Write a run in another tool's format");
  export_cmd
      ->add_flag("--perfetto", f->perfetto,
                 "a trace for the Perfetto UI (ui.perfetto.dev), trace_processor or chrome://tracing: a process per rank, a "
                 "track per CUDA stream, every op a slice with its fields as args, one collective's slices on all ranks joined "
                 "by flow arrows, on the aligned timeline")
      ->required();
  addRunOptions(export_cmd, f->options.paths, f->options.job, f->progress, f->step_range);
  addNamedOption(export_cmd, "--format", f->format, kTraceEncodings,
                 "protobuf: Perfetto's own format (compact, with flow arrows); json: Chrome trace-event JSON (about 10x "
                 "larger, no flows; chrome://tracing reads it)");
  export_cmd->add_option("--compress", f->compress, "gzip (about 5x smaller; every viewer opens it) or none")
      ->check(CLI::IsMember({"gzip", "none"}))
      ->capture_default_str();
  export_cmd->add_option("--out", f->options.out,
                         "file to write (default: PATH.perfetto-trace.gz, or PATH.perfetto.json.gz, next to the first path; "
                         "without .gz for --compress none)");
  export_cmd->add_option("--ranks", f->ranks, "only these global ranks, like 0-3,8");
  export_cmd->add_option("--steps", f->steps,
                         "only these steps of each rank, like 5 or 10-12 (from 0, as the report's overlap table numbers them: "
                         "its repeating top-level NVTX range, else its repeating op sequence)");
  export_cmd->add_option("--from", f->from, "only slices ending after this time on the trace's timeline, like 1.5s or 250ms");
  export_cmd->add_option("--to", f->to, "only slices starting before this time on the trace's timeline");
  return {export_cmd, [f] {
            ExportOptions& o = f->options;
            o.progress = kProgressModes.at(f->progress);
            o.perfetto.encoding = kTraceEncodings.at(f->format);
            o.perfetto.gzip = f->compress == "gzip";
            if (!parseExportFilter(f->ranks, f->steps, f->from, f->to, o.perfetto.filter)) return 2;
            if (!stepRuleFrom(f->step_range, o.perfetto.filter.step_rule)) return 2;
            return runExport(o, std::cout, std::cerr);
          }};
}

}  // namespace commtrace::tools
