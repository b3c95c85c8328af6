#include "tools/collect_command.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>

#include "tools/cli_command.h"
#include "tools/collect_server.h"
#include "tools/metrics_endpoint.h"

namespace commtrace::tools {
namespace {

std::atomic<bool> g_stop{false};

void requestStop(int) { g_stop.store(true); }

bool splitListen(const std::string& listen, std::string& host, uint16_t& port) {
  const size_t colon = listen.rfind(':');
  const std::string port_text = colon == std::string::npos ? listen : listen.substr(colon + 1);
  host = colon == std::string::npos || colon == 0 ? "0.0.0.0" : listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  char* end = nullptr;
  const long value = std::strtol(port_text.c_str(), &end, 10);
  if (port_text.empty() || *end != '\0' || value < 0 || value > 65535) return false;
  port = static_cast<uint16_t>(value);
  return true;
}

bool readKey(const CollectOptions& options, collect::LinkKey& key, std::ostream& err) {
  if (options.key_fd >= 0) {
    char hex[collect::kKeyHexDigits];
    size_t got = 0;
    while (got < sizeof hex) {
      const ssize_t n = read(options.key_fd, hex + got, sizeof hex - got);
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    close(options.key_fd);
    if (collect::keyFromHex({hex, got}, key)) return true;
    err << "commtrace: collector: no key on descriptor " << options.key_fd << "\n";
    return false;
  }
  if (const char* token = std::getenv("COMMTRACE_TOKEN"); token != nullptr && *token != '\0') {
    key = collect::keyFromToken(token);
    return true;
  }
  err << "commtrace: collect needs the job's key: set COMMTRACE_TOKEN, to the same value as in the job's environment\n";
  return false;
}

}  // namespace

int runCollect(const CollectOptions& options, std::ostream& err) {
  CollectServer::Options server_options;
  if (!splitListen(options.listen, server_options.host, server_options.port)) {
    err << "commtrace: collector: --listen " << options.listen << " is not HOST:PORT\n";
    return 1;
  }
  if (!readKey(options, server_options.key, err)) return 1;
  WatchOptions live = options.live;
  live.dir.clear();  // the streams come from the server, not a directory
  if (live.alerts_path.empty() && !options.spool_dir.empty()) live.alerts_path = options.spool_dir + "/alerts.jsonl";
  server_options.spool_dir = options.spool_dir;
  server_options.max_unproven_per_address = options.unproven_per_host;
  CollectServer server(server_options);
  if (!server.start(err)) return 1;
  err << "commtrace: collector listening on " << server_options.host << ":" << server.port() << "\n" << std::flush;
  struct sigaction action {};
  action.sa_handler = requestStop;
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  MetricsEndpoint endpoint;
  if (!options.metrics.empty()) {
    std::string host;
    uint16_t port = 0;
    if (!splitListen(options.metrics, host, port)) {
      err << "commtrace: collector: --metrics " << options.metrics << " is not HOST:PORT\n";
      return 1;
    }
    // Without its port the collector serves no /metrics, and still says what it sees: the
    // alerts are what the job's log reader waits for (it exited, and the job had none).
    if (endpoint.start(host, port, err))
      err << "commtrace: collector's metrics at http://" << host << ":" << endpoint.port() << "/metrics\n" << std::flush;
  }
  LiveLoop loop{.wait = [&](double seconds) { server.serveFor(seconds, err); },
                .stop = [&] { return g_stop.load() || (options.parent_pid > 0 && getppid() != options.parent_pid); },
                .publish = {},
                .feed = [&](report::RunFollower& follower) {
                  for (const CollectServer::Stream& s : server.takeNewStreams()) follower.admit(s.name, s.bytes, err);
                }};
  if (endpoint.port() != 0) loop.publish = [&](std::string text) { endpoint.publish(std::move(text)); };  // made only when served
  return followLive(live, loop, err, err);
}

Command addCollectCommand(CLI::App& app) {
  struct Flags {
    CollectOptions options;
    LiveFlags live;
  };
  const auto f = std::make_shared<Flags>();
  CLI::App* collect = app.add_subcommand(
      "collect", "Take the job's live digests over TCP and print straggler, hang and drop alerts into the job's log (rank 0 starts it)");
  collect->footer(
      "The job's processes send, once a second, a signed digest of what they recorded (their collectives, transfers, ops in "
      "flight); this runs `commtrace watch`'s engine on them. Global rank 0's libcommtrace.so starts it on its host unless "
      "COMMTRACE_LIVE=0; run standalone, it needs the job's COMMTRACE_TOKEN. Stops when every process has ended, on SIGTERM, "
      "or after --timeout.");
  CollectOptions& o = f->options;
  collect->add_option("--listen", o.listen, "HOST:PORT to listen on (the processes reach MASTER_ADDR:COMMTRACE_COLLECT_PORT)")
      ->capture_default_str();
  collect->add_option("--spool", o.spool_dir,
                      "also keep the digests as trace files here, one per process (`commtrace report` reads them); default: none, "
                      "they are read in memory");
  collect->add_option("--key-fd", o.key_fd, "read the job's key from this descriptor (how rank 0 hands it over)");
  collect->add_option("--parent-pid", o.parent_pid, "stop when this process is gone");
  collect->add_option("--metrics", o.metrics, "serve the live metrics for Prometheus at http://HOST:PORT/metrics (read-only; default: none)");
  collect->add_option("--unproven-per-host", o.unproven_per_host,
                      "connections from one address held at once before they prove they are the job's (a stranger's flood "
                      "crowds out only itself); raise it where a host runs more processes than this, or for a load test "
                      "from one address")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, size_t{65536}));
  o.live.interval_s = 0.5;  // its streams are in memory: looking twice a second costs little, and a HANG line comes up to half a second sooner
  addLiveOptions(collect, o.live, f->live, "SPOOL/alerts.jsonl with --spool, else none");
  return {collect, [f] {
            f->live.applyTo(f->options.live);
            return runCollect(f->options, std::cerr);
          }};
}

}  // namespace commtrace::tools
