// The commtrace command: dump one trace file, play the demo job, report on a run, export a
// run for the Perfetto UI, list the settings.
#include <malloc.h>

#include <cstdlib>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <iostream>
#include <map>

#include "tools/collect_command.h"
#include "tools/demo.h"
#include "tools/dump.h"
#include "tools/cli_values.h"
#include "tools/diff_command.h"
#include "tools/report_command.h"
#include "tools/watch_command.h"
#include "tools/settings_table.h"

namespace {

// `report --out r.html` without --format: the page, not text in a file named .html.
commtrace::tools::ReportFormat formatOfFile(const std::string& out, commtrace::tools::ReportFormat otherwise) {
  std::string ext = std::filesystem::path(out).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (ext == ".html" || ext == ".htm") return commtrace::tools::ReportFormat::kHtml;
  if (ext == ".json") return commtrace::tools::ReportFormat::kJson;
  return otherwise;
}

using commtrace::tools::ProgressMode;
using commtrace::tools::ReportFormat;

const std::map<std::string, ReportFormat> kFormats = {
    {"text", ReportFormat::kText}, {"json", ReportFormat::kJson}, {"csv", ReportFormat::kCsv}, {"html", ReportFormat::kHtml}};
const std::map<std::string, ProgressMode> kProgressModes = {
    {"auto", ProgressMode::kAuto}, {"always", ProgressMode::kAlways}, {"never", ProgressMode::kNever}};

// CLI11's enum transformer would print the enum's numbers in --help and accept them: the
// options take names, mapped after parsing.
template <class Enum>
CLI::Option* addNamedOption(CLI::App* cmd, const std::string& flag, std::string& name, const std::map<std::string, Enum>& names,
                            const std::string& help) {
  std::vector<std::string> keys;
  for (const auto& [key, value] : names) keys.push_back(key);
  return cmd->add_option(flag, name, help)->check(CLI::IsMember(keys))->capture_default_str();
}

const std::map<std::string, commtrace::report::TraceEncoding> kTraceEncodings = {
    {"protobuf", commtrace::report::TraceEncoding::kProtobuf}, {"json", commtrace::report::TraceEncoding::kJson}};

// export's filters from their option texts ("" where not given); false, with the reason on
// stderr, for a text that is not a value.
bool parseExportFilter(const std::string& ranks, const std::string& steps, const std::string& from, const std::string& to,
                       commtrace::report::ExportFilter& filter) {
  using namespace commtrace::tools;
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

void addJobOption(CLI::App* cmd, std::string& job) {
  cmd->add_option("--job", job,
                  "when the files come from several jobs (each file names its job): read only this job's, or 'all' "
                  "to read them as one run. Without it, files of several jobs are refused with a list of the jobs");
}

// What report and export read: the paths, which job, and how loading shows progress.
void addRunOptions(CLI::App* cmd, std::vector<std::string>& paths, std::string& job, std::string& progress,
                   std::string& step_range) {
  cmd->add_option("paths", paths,
                  "the run: directories (every *.ctrace below them, per-node subdirectories included) and trace files")
      ->required();
  addJobOption(cmd, job);
  addNamedOption(cmd, "--progress", progress, kProgressModes,
                 "a progress line on stderr while the files are read: auto (when stderr is a terminal), always, never");
  cmd->add_option("--step-range", step_range,
                  "the NVTX range that is one training step: a name, or an ECMAScript regular expression its whole name "
                  "matches ('train_step', 'iter [0-9]+'). Default: PyTorch's ProfilerStep#N ranges where recorded, else the "
                  "most frequent top-level range that repeats, else the op sequence's repeating period")
      ->envname("COMMTRACE_STEP_RANGE");
}

bool stepRuleFrom(const std::string& text, commtrace::report::StepRule& rule) {
  std::string error;
  const auto parsed = commtrace::tools::parseStepRule(text, error);
  if (!parsed) {
    std::cerr << "commtrace: --step-range " << error << "\n";
    return false;
  }
  rule = *parsed;
  return true;
}

// An option's time ("" where not given leaves it unset); false, with the reason, for a text
// that is not a time.
bool timePointFrom(const char* flag, const std::string& text, commtrace::report::TimePoint& point) {
  if (text.empty()) return true;
  std::string error;
  const auto parsed = commtrace::tools::parseTimePoint(text, error);
  if (!parsed) {
    std::cerr << "commtrace: " << flag << " " << error << "\nRun 'commtrace report --help' for usage.\n";
    return false;
  }
  point = *parsed;
  return true;
}

// The live engine's options, the same for watch and collect.
struct LiveFlags {
  double window_s = 1.0;
  double hang_after_s = 5.0;
  void applyTo(commtrace::tools::WatchOptions& o) const {
    o.rules.window_ns = static_cast<uint64_t>(window_s * 1e9);
    o.hang_rules.hang_after_ns = static_cast<uint64_t>(hang_after_s * 1e9);
  }
};

void addLiveOptions(CLI::App* cmd, commtrace::tools::WatchOptions& o, LiveFlags& flags, const std::string& alerts_default) {
  cmd->add_option("--interval", o.interval_s, "seconds between looks at what the processes wrote (their files; the collector: their streams)")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--window", flags.window_s, "seconds of the run judged at a time")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--min-slowdown", o.rules.min_effect, "the per-step slowdown worth an alert, as a fraction of the step")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 1.0));
  cmd->add_option("--persist", o.rules.persist, "windows in a row before an alert, or its recovery")->capture_default_str()->check(CLI::Range(1, 1000));
  cmd->add_option("--hang-after", flags.hang_after_s, "seconds a member waits in an op before its communicator is a HANG")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 86400.0));
  cmd->add_option("--alerts", o.alerts_path, "append alerts as JSON lines here (default " + alerts_default + ")");
  if (const char* prom = std::getenv("COMMTRACE_PROM_DIR")) o.prom_dir = prom;
  cmd->add_option("--prom-dir", o.prom_dir,
                  "rewrite DIR/commtrace.prom after every look, in Prometheus' text format for node-exporter's textfile "
                  "collector: collectives and busBw per communicator and func, last arrivals and waiting caused per rank, "
                  "stragglers and hangs now (default: $COMMTRACE_PROM_DIR)");
  cmd->add_option("--gone-after", o.gone_after_s,
                  "seconds without a heartbeat (a live process writes one every second) after which a process that never "
                  "said it ended (closed its file or stream) is taken as gone: once every process has ended or is gone, this stops")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--timeout", o.timeout_s, "stop after this many seconds even if files are still open (0: never)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
}

}  // namespace

int main(int argc, char** argv) {
  // The report's loader threads decode rows that the joining thread frees: with glibc's
  // arena per thread, freed blocks stayed scattered over the threads' arenas and the peak RSS
  // grew with the run (DDP 64 ranks x 1M collectives: 28-30 MB against 24 MB at 100k). Two
  // arenas keep it within 10 % at no cost in speed (bench/report_targets.sh, either way).
  mallopt(M_ARENA_MAX, 2);
  CLI::App app{"commtrace: NCCL communication tracer — read and analyse trace files"};
  app.set_version_flag("--version", std::string(COMMTRACE_VERSION));
  app.require_subcommand(1);

  std::vector<std::string> dump_paths;
  std::string dump_format = "text";
  CLI::App* dump = app.add_subcommand("dump", "Print every record of trace files (.ctrace), each after its header");
  dump->footer("Exit status: 0 when every file was read (damage is reported on stderr), 1 when a path names nothing or a "
               "file is not a trace, 2 for usage errors.");
  dump->add_option("paths", dump_paths, "trace files written by libcommtrace.so, or directories to read every *.ctrace below")
      ->required();
  dump->add_option("--format", dump_format, "text (one line per record) or json (JSON lines)")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();

  commtrace::tools::DemoOptions demo_options;
  CLI::App* demo = app.add_subcommand(
      "demo", "Play a simulated 8-rank, 2-node training job (one planted straggler, a slow link, skewed GPU clocks) through "
              "libcommtrace.so as NCCL's profiler plugin, then report on the run and list what was planted");
  demo->add_option("--dir", demo_options.dir, "run directory; an existing one is emptied only if it holds nothing but demo files")
      ->capture_default_str();
  demo->add_option("--scenario", demo_options.scenario, "scenario file to play instead of the built-in demo.json")
      ->check(CLI::ExistingFile);
  demo->add_option("--version", demo_options.profiler_version,
                   "bind only ncclProfiler_v<N> (4: NCCL 2.27, 5: 2.28, 6: 2.29-2.30, 7: 2.31); default: the newest")
      ->check(CLI::Range(4, 7));
  demo->add_option("--plugin", demo_options.plugin, "profiler plugin to load instead of ../lib/libcommtrace.so next to this binary");

  commtrace::tools::ReportOptions report_options;
  std::string report_format = "text", report_progress = "auto";
  CLI::App* report = app.add_subcommand(
      "report", "Analyse a run (every rank's trace files, from directories and files): findings, bandwidth, matrix, stragglers, mismatches, overlap");
  report->footer(
      "The text report starts with the top findings (straggler, slow link, exposed communication, lowest bandwidth), then the "
      "run's summary (files, damaged files, missing ranks, dropped records, clock alignment), communicators, the bandwidth table "
      "(nccl-tests algBw/busBw), stragglers, links, the heaviest rank pairs of the communication matrix, mismatches and hangs, and "
      "compute/communication overlap. Long tables are cut; json, csv and html hold every row.\n"
      "Exit status: 0 when the run was analysed (damaged or missing files are reported in it), 1 when nothing could be analysed "
      "or the output could not be written, 2 for usage errors.");
  std::string report_step_range, export_step_range;
  addRunOptions(report, report_options.paths, report_options.job, report_progress, report_step_range);
  addNamedOption(report, "--format", report_format, kFormats,
                 "text: a terminal summary; json: everything, schema commtrace.report.v1 (tools/report/SCHEMA.md); csv: one file "
                 "per table, needs --out DIR; html: one self-contained page with heatmaps and plots");
  report->add_option("--out", report_options.out,
                     "write to this file (text, json, html) or directory (csv) instead of stdout; without --format, a file "
                     "named .html, .htm or .json is written in that format");
  std::string report_from, report_to;
  report->add_option("--from", report_from,
                     "only the ops that started at or after this time: how long after the run's first process started "
                     "recording (90s, 2min), a UTC time (2026-11-27 06:31:02, as the report's 'time' line prints it), a "
                     "UTC time of day (06:31:02, on the day nearest the run's start), or where a step begins (step:100: the lowest rank's steps counted from 0 "
                     "as the overlap table counts them, its NVTX step ranges or else as its op sequence repeats). Kernel "
                     "totals still cover the whole run. A window that holds no op is said so, with exit status 1");
  report->add_option("--to", report_to, "only the ops that started before this time (as --from; --to step:N ends before step N)");

  commtrace::tools::DiffOptions diff_options;
  std::string diff_format = "text", diff_progress = "auto";
  CLI::App* diff = app.add_subcommand("diff", "What changed between two runs, as before and after tuning: step and communication time, "
                                              "ops, ranks, culprits");
  diff->footer(
      "Both runs are analysed as `commtrace report` analyses them. Communicators are matched by name (NCCL's commName; "
      "unnamed ones by their size), ops by (communicator, func, size bucket) whatever algorithm and protocol NCCL chose "
      "(a change of those is shown); ops in one run only are marked new or gone. Culprits (stragglers, slow hosts and links) "
      "and losses (missing ranks, dropped records, mismatches) are compared by kind and subject. Runs of different rank "
      "counts, or without an op in common, are compared with a warning on stderr.\n"
      "Exit status: 0 when both runs were analysed, 1 when either could not be read or the output not written, 2 for usage errors.");
  diff->add_option("run_a", diff_options.run_a, "the run before: a run directory or trace file")->required();
  diff->add_option("run_b", diff_options.run_b, "the run after")->required();
  addNamedOption(diff, "--format", diff_format, std::map<std::string, bool>{{"text", false}, {"json", true}},
                 "text: tables for a terminal; json: every row, schema commtrace.diff.v1");
  diff->add_option("--out", diff_options.out, "write to this file instead of stdout");
  addJobOption(diff, diff_options.job);
  addNamedOption(diff, "--progress", diff_progress, kProgressModes,
                 "a progress line on stderr while the files are read: auto (when stderr is a terminal), always, never");

  commtrace::tools::ExportOptions export_options;
  std::string export_progress = "auto", export_format = "protobuf", export_ranks, export_steps, export_from, export_to;
  CLI::App* export_cmd = app.add_subcommand("export", "Write a run in another tool's format");
  bool perfetto = false;  // the only export target so far, hence required
  export_cmd
      ->add_flag("--perfetto", perfetto,
                 "a trace for the Perfetto UI (ui.perfetto.dev), trace_processor or chrome://tracing: a process per rank, a "
                 "track per CUDA stream, every op a slice with its fields as args, one collective's slices on all ranks joined "
                 "by flow arrows, on the aligned timeline")
      ->required();
  addRunOptions(export_cmd, export_options.paths, export_options.job, export_progress, export_step_range);
  addNamedOption(export_cmd, "--format", export_format, kTraceEncodings,
                 "protobuf: Perfetto's own format (compact, with flow arrows); json: Chrome trace-event JSON (about 10x "
                 "larger, no flows; chrome://tracing reads it)");
  std::string export_compress = "gzip";
  export_cmd->add_option("--compress", export_compress, "gzip (about 5x smaller; every viewer opens it) or none")
      ->check(CLI::IsMember({"gzip", "none"}))
      ->capture_default_str();
  export_cmd->add_option("--out", export_options.out,
                         "file to write (default: PATH.perfetto-trace.gz, or PATH.perfetto.json.gz, next to the first path; "
                         "without .gz for --compress none)");
  export_cmd->add_option("--ranks", export_ranks, "only these global ranks, like 0-3,8");
  export_cmd->add_option("--steps", export_steps,
                         "only these steps of each rank, like 5 or 10-12 (from 0, as the report's overlap table numbers them: "
                         "its repeating top-level NVTX range, else its repeating op sequence)");
  export_cmd->add_option("--from", export_from, "only slices ending after this time on the trace's timeline, like 1.5s or 250ms");
  export_cmd->add_option("--to", export_to, "only slices starting before this time on the trace's timeline");

  commtrace::tools::WatchOptions watch_options;
  CLI::App* watch = app.add_subcommand(
      "watch", "Follow a run directory while its job writes it and print straggler and hang alerts as they arise (also to RUN_DIR/alerts.jsonl)");
  watch->footer(
      "Reads the trace files as they grow (a shared file system; no network), joins each collective once every member has "
      "written it, and judges windows of the run once every file has passed them: a rank last far more often than chance "
      "(z >= 4) whose lateness cost the others at least --min-slowdown of their time, in --persist windows in a row, is "
      "named (STRAGGLER), and again when it no longer is (RECOVERED). A communicator on which a member has waited "
      "--hang-after seconds in an op (each process reports, once a second, the ops it has had in flight for a second or more) "
      "is a HANG: the line names the op, who waits, and where every other member was last seen; RECOVERED when the op goes "
      "on. Stops when every file is closed (the job ended) or after --timeout.");
  watch->add_option("run_dir", watch_options.dir, "the run directory (COMMTRACE_DIR of the job)")->required();
  LiveFlags watch_flags;
  addLiveOptions(watch, watch_options, watch_flags, "RUN_DIR/alerts.jsonl");

  commtrace::tools::CollectOptions collect_options;
  CLI::App* collect = app.add_subcommand(
      "collect", "Take the job's live digests over TCP and print straggler and hang alerts into the job's log (rank 0 starts it)");
  collect->footer(
      "The job's processes send, once a second, a signed digest of what they recorded (their collectives, transfers, ops in "
      "flight); this runs `commtrace watch`'s engine on them. Global rank 0's libcommtrace.so starts it on its host unless "
      "COMMTRACE_LIVE=0; run standalone, it needs the job's COMMTRACE_TOKEN. Stops when every process has ended, on SIGTERM, "
      "or after --timeout.");
  collect->add_option("--listen", collect_options.listen, "HOST:PORT to listen on (the processes reach MASTER_ADDR:COMMTRACE_COLLECT_PORT)")
      ->capture_default_str();
  collect->add_option("--spool", collect_options.spool_dir,
                      "also keep the digests as trace files here, one per process (`commtrace report` reads them); default: none, "
                      "they are read in memory");
  collect->add_option("--key-fd", collect_options.key_fd, "read the job's key from this descriptor (how rank 0 hands it over)");
  collect->add_option("--parent-pid", collect_options.parent_pid, "stop when this process is gone");
  collect->add_option("--metrics", collect_options.metrics,
                      "serve the live metrics for Prometheus at http://HOST:PORT/metrics (read-only; default: none)");
  LiveFlags collect_flags;
  collect_options.live.interval_s = 0.5;  // its streams are in memory: looking twice a second costs little, and a HANG line comes up to half a second sooner
  addLiveOptions(collect, collect_options.live, collect_flags, "SPOOL/alerts.jsonl with --spool, else none");

  CLI::App* settings = app.add_subcommand(
      "settings", "List every COMMTRACE_* environment variable libcommtrace.so reads: default, values, what it changes");

  // CLI11 reads a mistyped command as a stray argument and then asks for "a subcommand":
  // name the word it did not know instead.
  std::string known;
  bool is_command = false;
  for (const CLI::App* sub : app.get_subcommands({})) {
    known += (known.empty() ? "" : ", ") + sub->get_name();
    is_command = is_command || (argc > 1 && sub->get_name() == argv[1]);
  }
  if (argc > 1 && argv[1][0] != '-' && !is_command) {
    std::cerr << "commtrace: '" << argv[1] << "' is not a commtrace command (" << known
              << ")\nRun 'commtrace --help' for usage.\n";
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "commtrace: " << e.what() << "\nRun 'commtrace --help' for usage.\n";
    return 2;
  }

  if (*dump) {
    const auto format = dump_format == "json" ? commtrace::tools::DumpFormat::kJson : commtrace::tools::DumpFormat::kText;
    return commtrace::tools::dump(dump_paths, format, std::cout, std::cerr);
  }
  if (*settings) {
    std::cout << commtrace::tools::settingsMarkdown();
    return 0;
  }
  if (*demo) {
    demo_options.program = argv[0];
    return commtrace::tools::runDemo(demo_options, std::cout, std::cerr);
  }
  if (*report) {
    report_options.format = kFormats.at(report_format);
    if (report->get_option("--format")->count() == 0) report_options.format = formatOfFile(report_options.out, report_options.format);
    report_options.progress = kProgressModes.at(report_progress);
    if (!stepRuleFrom(report_step_range, report_options.step_rule)) return 2;
    if (!timePointFrom("--from", report_from, report_options.window.from) || !timePointFrom("--to", report_to, report_options.window.to))
      return 2;
    return commtrace::tools::runReport(report_options, std::cout, std::cerr);
  }
  if (*diff) {
    diff_options.json = diff_format == "json";
    diff_options.progress = kProgressModes.at(diff_progress);
    return commtrace::tools::runDiff(diff_options, std::cout, std::cerr);
  }
  if (*watch) {
    watch_flags.applyTo(watch_options);
    return commtrace::tools::runWatch(watch_options, std::cout, std::cerr);
  }
  if (*collect) {
    collect_flags.applyTo(collect_options.live);
    return commtrace::tools::runCollect(collect_options, std::cerr);
  }
  if (*export_cmd) {
    export_options.progress = kProgressModes.at(export_progress);
    export_options.perfetto.encoding = kTraceEncodings.at(export_format);
    export_options.perfetto.gzip = export_compress == "gzip";
    if (!parseExportFilter(export_ranks, export_steps, export_from, export_to, export_options.perfetto.filter)) return 2;
    if (!stepRuleFrom(export_step_range, export_options.perfetto.filter.step_rule)) return 2;
    return commtrace::tools::runExport(export_options, std::cout, std::cerr);
  }
  return 0;
}
