#include "tools/watch_command.h"

#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "tools/cli_command.h"

#include "core/clock.h"
#include "tools/report/load/run_follower.h"
#include "tools/report/load/op_stream.h"
#include "tools/report/output/live_rules.h"
#include "tools/report/output/prometheus_text.h"

namespace commtrace::tools {
namespace {

using Clock = std::chrono::steady_clock;

// A watch may start before the job has made its run directory: waits for it (saying so once)
// until the timeout. false, with the reason on err, when it is something else or never came.
bool waitForDirectory(const WatchOptions& options, Clock::time_point start, std::ostream& err) {
  bool said = false;
  for (;;) {
    std::error_code ec;
    const auto status = std::filesystem::status(options.dir, ec);
    if (std::filesystem::is_directory(status)) return true;
    if (std::filesystem::exists(status)) {
      err << "commtrace: " << options.dir << ": not a directory\n";
      return false;
    }
    if (options.timeout_s > 0 && Clock::now() - start >= std::chrono::duration<double>(options.timeout_s)) {
      err << "commtrace: " << options.dir << ": no such directory, and none appeared within " << options.timeout_s << " s\n";
      return false;
    }
    if (!said) err << "commtrace: waiting for " << options.dir << " to appear\n";
    said = true;
    std::this_thread::sleep_for(std::chrono::duration<double>(options.interval_s));
  }
}

}  // namespace

int followLive(const WatchOptions& options, const LiveLoop& loop, std::ostream& out, std::ostream& err) {
  const Clock::time_point start = Clock::now();
  const std::string alerts_path = !options.alerts_path.empty() ? options.alerts_path
                                  : options.dir.empty()          ? std::string()
                                                                 : options.dir + "/alerts.jsonl";
  std::ofstream alerts;
  if (!alerts_path.empty()) alerts.open(alerts_path, std::ios::app);
  if (!alerts_path.empty() && !alerts) {
    err << "commtrace: " << alerts_path << ": cannot write the alerts file\n";
    return 1;
  }
  report::RunModel run;
  const auto rules = report::makeLiveRules(run, options.rules, [&](const report::AlertRow& alert) {
    out << alert.line << '\n' << std::flush;
    if (alerts.is_open())
      alerts << alert.json(realtimeNs()).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n' << std::flush;
  });
  std::vector<report::JoinedOpSink*> sinks;
  for (const auto& rule : rules) sinks.push_back(rule.get());
  report::OpFanout joined(std::move(sinks));
  report::RunFollower follower(options.dir, run, joined);
  follower.observeBatches([&](const report::RecordBatch& batch) {
    for (const auto& rule : rules) rule->observe(batch);
  });
  // The metrics text, made once per look for the file and the collector's /metrics. A file
  // that cannot be written costs the file, never the alerts (a collector that exited over it
  // left its job with none); its directory is made when its parent is there.
  std::string prom_dir = options.prom_dir;
  if (!prom_dir.empty()) mkdir(prom_dir.c_str(), 0755);
  const auto putMetrics = [&] {
    if (prom_dir.empty() && !loop.publish) return;
    std::ostringstream text;
    report::writePrometheusText(rules, text);
    if (loop.publish) loop.publish(text.str());
    if (!prom_dir.empty() && !report::writePrometheusFile(text.str(), prom_dir, err)) prom_dir.clear();
  };
  for (;;) {
    if (loop.feed) loop.feed(follower);
    if (!follower.poll(err)) return 1;
    for (const auto& rule : rules) rule->advance(follower.watermark(), realtimeNs());
    putMetrics();
    // Ended: every process closed its file, or went silent for kGoneAfter (died without the chance).
    const size_t gone = follower.silentFiles(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.gone_after_s)));
    const bool ended = follower.files() > 0 && follower.closedFiles() + gone == follower.files();
    if (ended && gone > 0)
      err << "commtrace: " << gone << " of " << follower.files() << " processes went silent for " << options.gone_after_s
          << " s without closing their files (they died, or froze): the job is taken as ended\n";
    const bool timed_out = options.timeout_s > 0 && Clock::now() - start >= std::chrono::duration<double>(options.timeout_s);
    if (ended || timed_out || (loop.stop && loop.stop())) break;
    if (loop.wait) loop.wait(options.interval_s);
    else std::this_thread::sleep_for(std::chrono::duration<double>(options.interval_s));
  }
  follower.finish();
  for (const auto& rule : rules) rule->end();
  putMetrics();
  return 0;
}

int runWatch(const WatchOptions& options, std::ostream& out, std::ostream& err) {
  if (!waitForDirectory(options, Clock::now(), err)) return 1;
  return followLive(options, {}, out, err);
}

void LiveFlags::applyTo(WatchOptions& o) const {
  o.rules.stragglers.window_ns = static_cast<uint64_t>(window_s * 1e9);
  o.rules.hangs.hang_after_ns = static_cast<uint64_t>(hang_after_s * 1e9);
}

void addLiveOptions(CLI::App* cmd, WatchOptions& o, LiveFlags& flags, const std::string& alerts_default) {
  cmd->add_option("--interval", o.interval_s, "seconds between looks at what the processes wrote (their files; the collector: their streams)")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--window", flags.window_s, "seconds of the run judged at a time")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--min-slowdown", o.rules.stragglers.min_effect, "the per-step slowdown worth an alert, as a fraction of the step")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 1.0));
  cmd->add_option("--persist", o.rules.stragglers.persist, "windows in a row before an alert, or its recovery")->capture_default_str()->check(CLI::Range(1, 1000));
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

Command addWatchCommand(CLI::App& app) {
  struct Flags {
    WatchOptions options;
    LiveFlags live;
  };
  const auto f = std::make_shared<Flags>();
  CLI::App* watch = app.add_subcommand(
      "watch", "Follow a run directory while its job writes it and print straggler, hang and drop alerts as they arise (also to RUN_DIR/alerts.jsonl)");
  watch->footer(
      "Reads the trace files as they grow (a shared file system; no network), joins each collective once every member has "
      "written it, and judges windows of the run once every file has passed them: a rank last far more often than chance "
      "(z >= 4) whose lateness cost the others at least --min-slowdown of their time, in --persist windows in a row, is "
      "named (STRAGGLER), and again when it no longer is (RECOVERED). A communicator on which a member has waited "
      "--hang-after seconds in an op (each process reports, once a second, the ops it has had in flight for a second or more) "
      "is a HANG: the line names the op, who waits, and where every other member was last seen; RECOVERED when the op goes "
      "on. A rank whose records are being lost before its file (its rings full, its file unwritable) is DROPS, RECOVERED "
      "once its file has gone 10 s on without a loss. Stops when every file is closed (the job ended) or after --timeout.");
  watch->add_option("run_dir", f->options.dir, "the run directory (COMMTRACE_DIR of the job)")->required();
  addLiveOptions(watch, f->options, f->live, "RUN_DIR/alerts.jsonl");
  return {watch, [f] {
            f->live.applyTo(f->options);
            return runWatch(f->options, std::cout, std::cerr);
          }};
}

}  // namespace commtrace::tools
