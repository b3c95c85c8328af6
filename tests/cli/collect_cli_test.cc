// The live collector with jobs the NCCL driver plays in real time through libcommtrace.so:
// global rank 0 starts `commtrace collect`, whose HANG line lands in the job's own output;
// and a job whose collector is absent, killed mid-run, speaks garbage or holds another key
// ends as it does without live alerts (same exit status, same ops recorded, its trace files
// whole).
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <arpa/inet.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <random>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <thread>

#include "tests/support/commtrace_cli.h"
#include "tests/support/http_get.h"
#include "tests/support/live_run.h"
#include "tests/support/run_program.h"
#include "tests/support/temp_dir.h"

namespace commtrace {
namespace {

using testutil::TempDir;
using testutil::ProgramResult;

// A port nothing listens on now (the kernel's choice for a socket bound and closed).
uint16_t freePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t size = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &size);
  close(fd);
  return ntohs(addr.sin_port);
}

ProgramResult playJob(const std::string& scenario, const std::string& run_dir, const std::map<std::string, std::optional<std::string>>& env) {
  TempDir scratch;
  return testutil::runProgram({COMMTRACE_DRIVER, "--scenario", std::string(COMMTRACE_SCENARIO_DIR) + "/" + scenario, "--plugin",
                               COMMTRACE_SO, "--out", run_dir, "--time-scale", "1"},
                              scratch.path(), env);
}

using testutil::alertsOf;

// What the ranks say they did ("rank 1/2 done: 200 NCCL calls, 200 Coll + 0 P2p events, ..."), in order.
std::set<std::string> rankLines(const std::string& text) {
  std::set<std::string> out;
  for (const std::string& line : testutil::linesOf(text))
    if (line.rfind("rank ", 0) == 0) out.insert(line);
  return out;
}

TEST(CollectCli, RankZeroStartsTheCollectorAndTheHangLandsInTheJobsLog) {
  TempDir dir;
  const std::string run_dir = dir.path() + "/run";
  const uint16_t metrics_port = freePort();
  std::atomic<bool> job_done{false};
  std::string hang_metric;  // the hang's series, as the collector's /metrics served it while it lasted
  std::thread scraper([&] {
    const std::regex series(R"(commtrace_hang_seconds\{comm="world.0",comm_id="0x[0-9a-f]{16}",func="AllReduce"\} [0-9.]+)");
    while (!job_done) {
      const std::string text = testutil::httpGet(metrics_port, "/metrics");
      std::smatch m;
      if (hang_metric.empty() && std::regex_search(text, m, series)) hang_metric = m.str();
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  });
  const ProgramResult job = playJob("live_hang.json", run_dir,
                                    {{"COMMTRACE_TOKEN", "test-token"},
                                     {"COMMTRACE_COLLECT_PORT", std::to_string(freePort())},
                                     {"COMMTRACE_METRICS_PORT", std::to_string(metrics_port)}});
  job_done = true;
  scraper.join();
  ASSERT_EQ(job.exit_code, 0) << job.err;
  EXPECT_FALSE(hang_metric.empty()) << "the collector's /metrics never showed the hang";
  const std::string log = job.out + job.err;
  EXPECT_NE(log.find("commtrace: collector listening on 127.0.0.1:"), std::string::npos) << "MASTER_ADDR, not every interface:\n" << log;
  EXPECT_NE(log.find("commtrace: HANG AllReduce #60 on world.0: ranks 0,1,3 waiting "), std::string::npos) << log;
  EXPECT_NE(log.find("; rank 2 last seen at AllReduce #59"), std::string::npos) << log;
  EXPECT_NE(log.find("commtrace: RECOVERED AllReduce #60 on world.0 went on after "), std::string::npos) << log;
  const std::vector<nlohmann::json> alerts = alertsOf(run_dir + "/alerts.jsonl");
  ASSERT_EQ(alerts.size(), 2u);
  // The wait began when the others issued #60; the driver plays it 60 steps of 40 ms in.
  const double waited_at_alert = alerts[0]["waited_s"].get<double>();
  EXPECT_GE(waited_at_alert, 5.0);
  EXPECT_LE(waited_at_alert, 10.0) << "the first HANG line came " << waited_at_alert << " s after progress stopped";
  std::printf("HANG through the collector after %.1f s of waiting\n", waited_at_alert);
}

// A rank 6 % slower from step 75 on: rank 0's collector names it in the job's log within 5 s.
TEST(CollectCli, AStragglerIsNamedThroughTheCollectorWithinFiveSeconds) {
  TempDir dir;
  const std::string run_dir = dir.path() + "/run";
  const ProgramResult job = playJob("live_straggler.json", run_dir,
                                    {{"COMMTRACE_TOKEN", "test-token"}, {"COMMTRACE_COLLECT_PORT", std::to_string(freePort())}});
  ASSERT_EQ(job.exit_code, 0) << job.err;
  // On the job's stderr, with the collector's other lines, apart from what the program prints.
  EXPECT_NE(job.err.find("commtrace: STRAGGLER rank 1 "), std::string::npos) << job.out << job.err;
  EXPECT_EQ(job.out.find("commtrace:"), std::string::npos) << job.out;
  const std::vector<nlohmann::json> alerts = alertsOf(run_dir + "/alerts.jsonl");
  ASSERT_EQ(alerts.size(), 1u);
  EXPECT_EQ(alerts[0]["kind"], "STRAGGLER");
  EXPECT_EQ(alerts[0]["rank"], 1);
  EXPECT_EQ(alerts[0]["class"], "compute") << "its extra compute lengthened its GPU's gap before each AllReduce: " << alerts[0]["line"];
  EXPECT_NEAR(alerts[0]["gap_excess_us"].get<double>(), 2500, 500) << alerts[0]["line"];
  const uint64_t onset = testutil::onsetUtc(run_dir);
  ASSERT_NE(onset, UINT64_MAX);
  const auto raised = alerts[0]["raised_utc_ns"].get<uint64_t>();
  EXPECT_LE(raised - onset, 5'000'000'000u) << "raised " << (raised - onset) / 1e9 << " s after the slowdown began";
  std::printf("STRAGGLER through the collector %.2f s after the slowdown began\n", static_cast<double>(raised - onset) / 1e9);
}

// A collector that answers with garbage: accepts, writes nonsense, reads what comes.
class GarbageServer {
 public:
  GarbageServer() : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    listen(fd_, 64);
    socklen_t size = sizeof addr;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &size);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] {
      while (!stop_) {
        const int c = accept(fd_, nullptr, nullptr);
        if (c < 0) break;
        const char junk[] = "HTTP/1.1 400 Bad Request\r\n\r\nnot a collector at all";
        (void)!write(c, junk, sizeof junk);
        char buffer[4096];
        while (read(c, buffer, sizeof buffer) > 0) {
        }
        close(c);
      }
    });
  }
  ~GarbageServer() {
    stop_ = true;
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    thread_.join();
  }
  uint16_t port() const { return port_; }

 private:
  int fd_;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// A standalone `commtrace collect` on port, killed after kill_after_s if that is positive.
class StandaloneCollector {
 public:
  StandaloneCollector(uint16_t port, const std::string& token, double kill_after_s) {
    pid_ = fork();
    if (pid_ == 0) {
      setenv("COMMTRACE_TOKEN", token.c_str(), 1);
      const std::string listen = "127.0.0.1:" + std::to_string(port);
      execl(COMMTRACE_CLI, COMMTRACE_CLI, "collect", "--listen", listen.c_str(), "--timeout", "60", nullptr);
      _exit(127);
    }
    if (kill_after_s > 0) killer_ = std::thread([this, kill_after_s] {
      std::this_thread::sleep_for(std::chrono::duration<double>(kill_after_s));
      kill(pid_, SIGKILL);
    });
  }
  ~StandaloneCollector() {
    if (killer_.joinable()) killer_.join();
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }

 private:
  pid_t pid_ = -1;
  std::thread killer_;
};

// Rank 0's collector cannot have its port: one line says so, the ranks stay quiet about the
// collector they cannot reach, and the job runs as without live alerts.
// Standalone, it appends its alerts to SPOOL/alerts.jsonl with --spool (and --alerts where
// given), and without either writes no file, least of all where it was started.
TEST(CollectCli, AStandaloneCollectorKeepsItsAlertsFileInItsSpoolOrNowhere) {
  TempDir cwd, spool;
  for (const bool with_spool : {false, true}) {
    std::vector<std::string> args{COMMTRACE_CLI, "collect", "--listen", "127.0.0.1:0", "--timeout", "0.3"};
    if (with_spool) args.insert(args.end(), {"--spool", spool.path()});
    const ProgramResult r = testutil::runProgram(args, cwd.path(), {{"COMMTRACE_TOKEN", "test-token"}});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("commtrace: collector listening on 127.0.0.1:"), std::string::npos) << r.err;
  }
  EXPECT_TRUE(std::filesystem::exists(spool.path() + "/alerts.jsonl"));
  EXPECT_TRUE(std::filesystem::is_empty(cwd.path())) << "nothing written where it was started";
}

TEST(CollectCli, APortTakenCostsOneLineAndNotTheJob) {
  TempDir dir;
  GarbageServer squatter;  // holds the port on 127.0.0.1
  const ProgramResult job = playJob("live_straggler.json", dir.path() + "/run",
                                    {{"COMMTRACE_TOKEN", "test-token"}, {"COMMTRACE_COLLECT_PORT", std::to_string(squatter.port())}});
  EXPECT_EQ(job.exit_code, 0) << job.err;
  size_t lines = 0;
  for (const std::string& line : testutil::linesOf(job.out + job.err)) lines += line.rfind("commtrace:", 0) == 0;
  EXPECT_EQ(lines, 1u) << job.out << job.err;
  EXPECT_NE(job.err.find("commtrace: collector: cannot listen on 127.0.0.1:" + std::to_string(squatter.port()) +
                         ": Address already in use (another program has the port"),
            std::string::npos)
      << job.err;
}

// The metrics side lost (COMMTRACE_METRICS_PORT taken) or not there yet (COMMTRACE_PROM_DIR
// whose parent exists): rank 0's collector exited over either, and the job got no alert.
// Now the straggler is named as ever, one line says /metrics is not served, and the
// directory is made, with the collector's file and the ranks' in it.
TEST(CollectCli, LosingTheMetricsSideCostsNoAlert) {
  TempDir dir;
  GarbageServer squatter;  // holds the metrics port on 127.0.0.1
  const std::string run_dir = dir.path() + "/run", prom_dir = dir.path() + "/prom";
  const ProgramResult job = playJob("live_straggler.json", run_dir,
                                    {{"COMMTRACE_TOKEN", "test-token"},
                                     {"COMMTRACE_COLLECT_PORT", std::to_string(freePort())},
                                     {"COMMTRACE_METRICS_PORT", std::to_string(squatter.port())},
                                     {"COMMTRACE_PROM_DIR", prom_dir}});
  ASSERT_EQ(job.exit_code, 0) << job.err;
  EXPECT_NE((job.out + job.err).find("commtrace: STRAGGLER rank 1 "), std::string::npos) << job.out << job.err;
  EXPECT_NE(job.err.find("no /metrics (the alerts go on)"), std::string::npos) << job.err;
  EXPECT_EQ(alertsOf(run_dir + "/alerts.jsonl").size(), 1u);
  EXPECT_TRUE(std::filesystem::exists(prom_dir + "/commtrace.prom")) << "the collector's job-wide metrics file";
}

// The pid of the `commtrace collect` listening on `port`, or 0.
pid_t collectorOn(uint16_t port) {
  const std::string listen = ":" + std::to_string(port);
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::ifstream in(entry.path() / "cmdline", std::ios::binary);
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find(" collect --listen ") != std::string::npos && cmdline.find(listen + " ") != std::string::npos)
      return static_cast<pid_t>(std::stol(entry.path().filename().string()));
  }
  return 0;
}

// A collector frozen with SIGSTOP held the job's output open after the job: whatever reads
// the job's log (here, a pipe) waited for an end that never came. Rank 0 kills a stopped
// collector it started as it ends.
TEST(CollectCli, AFrozenCollectorDoesNotHoldTheJobsLogOpen) {
  TempDir dir, scratch;
  const uint16_t port = freePort();
  int log[2];
  ASSERT_EQ(pipe(log), 0);
  std::fflush(nullptr);
  const pid_t job = fork();
  if (job == 0) {
    setenv("COMMTRACE_TOKEN", "test-token", 1);
    setenv("COMMTRACE_COLLECT_PORT", std::to_string(port).c_str(), 1);
    dup2(log[1], STDOUT_FILENO);
    dup2(log[1], STDERR_FILENO);
    close(log[0]);
    const std::string scenario = std::string(COMMTRACE_SCENARIO_DIR) + "/live_straggler.json", out = dir.path() + "/run";
    execl(COMMTRACE_DRIVER, COMMTRACE_DRIVER, "--scenario", scenario.c_str(), "--plugin", COMMTRACE_SO, "--out", out.c_str(),
          "--time-scale", "1", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(log[1]);
  pid_t collector = 0;
  for (int i = 0; i < 100 && collector == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    collector = collectorOn(port);
  }
  ASSERT_NE(collector, 0) << "rank 0 started no collector";
  kill(collector, SIGSTOP);
  int status = 0;
  ASSERT_EQ(waitpid(job, &status, 0), job);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const auto exited = std::chrono::steady_clock::now();
  std::string text;
  char buffer[4096];
  bool ended = false;
  while (std::chrono::steady_clock::now() - exited < std::chrono::seconds(5)) {
    pollfd p{log[0], POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    const ssize_t n = read(log[0], buffer, sizeof buffer);
    if (n <= 0) {
      ended = true;
      break;
    }
    text.append(buffer, static_cast<size_t>(n));
  }
  kill(collector, SIGKILL);  // whatever the outcome, nothing left behind
  kill(collector, SIGCONT);
  close(log[0]);
  EXPECT_TRUE(ended) << "the job's log was still open 5 s after the job ended:\n" << text;
}

TEST(CollectCli, TheJobIsTheSameWhateverBecomesOfItsCollector) {
  TempDir dir;
  const ProgramResult baseline = playJob("live_straggler.json", dir.path() + "/baseline", {{"COMMTRACE_LIVE", "0"}});
  ASSERT_EQ(baseline.exit_code, 0) << baseline.err;
  const std::set<std::string> ranks_did = rankLines(baseline.out + baseline.err);
  ASSERT_EQ(ranks_did.size(), 2u);

  const uint16_t absent = freePort();
  GarbageServer garbage;
  const uint16_t killed_port = freePort(), wrong_key_port = freePort();
  StandaloneCollector killed(killed_port, "test-token", 2.0);
  StandaloneCollector wrong_key(wrong_key_port, "another-jobs-token", 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // both listening
  const std::vector<std::pair<std::string, uint16_t>> cases = {
      {"absent", absent}, {"garbage", garbage.port()}, {"killed mid-run", killed_port}, {"another key", wrong_key_port}};
  for (const auto& [what, port] : cases) {
    SCOPED_TRACE("collector " + what);
    const std::string run_dir = dir.path() + "/" + std::to_string(port);
    const ProgramResult job = playJob("live_straggler.json", run_dir,
                                      {{"COMMTRACE_TOKEN", "test-token"},
                                       {"COMMTRACE_COLLECT_ADDR", "127.0.0.1"},
                                       {"COMMTRACE_COLLECT_PORT", std::to_string(port)}});
    EXPECT_EQ(job.exit_code, 0) << job.err;
    EXPECT_EQ(rankLines(job.out + job.err), ranks_did);
    // At most one line per rank about its collector, past the grace period.
    size_t link_lines = 0;
    for (const std::string& line : testutil::linesOf(job.err)) link_lines += line.rfind("commtrace: live collector at", 0) == 0;
    EXPECT_LE(link_lines, 2u) << job.err;
    // The trace files are whole: the report reads the run and finds every collective.
    TempDir scratch;
    const ProgramResult report = testutil::commtrace(scratch, {"report", run_dir, "--format", "json"});
    ASSERT_EQ(report.exit_code, 0) << report.err;
    const nlohmann::json json = nlohmann::json::parse(report.out);
    EXPECT_EQ(json["run"]["collective_instances"], 200) << json["run"].dump();
    EXPECT_EQ(json["run"]["damaged_files"], 0);
    EXPECT_EQ(json["run"]["files_left_open"], 0);
  }
}

// Strangers beside a job, each on its own thread for as long as the job runs, from loopback
// addresses other than the ranks' 127.0.0.1 (other hosts, to the collector).
class Strangers {
 public:
  Strangers(uint16_t collect_port, uint16_t metrics_port) {
    threads_.emplace_back([=, this] { sendGarbage(collect_port); });
    threads_.emplace_back([=, this] { holdIdle(collect_port); });
    threads_.emplace_back([=, this] { dribbleMetricsRequest(metrics_port); });
  }
  ~Strangers() { stop(); }
  void stop() {
    stop_ = true;
    for (std::thread& t : threads_)
      if (t.joinable()) t.join();
  }
  int garbage_connections = 0;
  size_t most_idle_held = 0;

 private:
  static int connectFrom(const char* source, uint16_t port) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in from{.sin_family = AF_INET, .sin_port = 0, .sin_addr = {}, .sin_zero = {}};
    inet_pton(AF_INET, source, &from.sin_addr);
    sockaddr_in to{.sin_family = AF_INET, .sin_port = htons(port), .sin_addr = {htonl(INADDR_LOOPBACK)}, .sin_zero = {}};
    if (bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0 || connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
      close(fd);
      return -1;
    }
    return fd;
  }
  // Connections that send bytes of every kind: random, HTTP, a digest header announcing a
  // megabyte followed by one, until the collector closes them.
  void sendGarbage(uint16_t port) {
    std::mt19937 rng(7);
    for (int i = 0; !stop_; ++i) {
      const int fd = connectFrom("127.0.0.3", port);
      if (fd < 0) continue;
      std::vector<uint8_t> bytes(i % 3 == 2 ? 1'000'000 : 256);
      for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
      if (i % 3 == 1) std::memcpy(bytes.data(), "GET / HTTP/1.1\r\n\r\n", 18);
      if (i % 3 == 2) std::memcpy(bytes.data(), "CTDG\0\0\x10\0\0\0\0\0\0\0\0\0", 16);
      send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      close(fd);
      ++garbage_connections;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  // 1,100 idle connections kept open (the job's descriptor limit is 1,024), the oldest 100
  // replaced every 200 ms.
  void holdIdle(uint16_t port) {
    std::deque<int> held;
    while (!stop_) {
      while (held.size() < 1100 && !stop_) {
        const int fd = connectFrom("127.0.0.2", port);
        if (fd < 0) break;
        held.push_back(fd);
      }
      most_idle_held = std::max(most_idle_held, held.size());
      for (int i = 0; i < 100 && !held.empty(); ++i) {  // the oldest make way for fresh ones
        close(held.front());
        held.pop_front();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    for (int fd : held) close(fd);
  }
  // A /metrics client that sends its request a byte every half second, over and over.
  void dribbleMetricsRequest(uint16_t port) {
    const std::string request = "GET /metrics HTTP/1.1\r\nHost: slow\r\n\r\n";
    while (!stop_) {
      const int fd = connectFrom("127.0.0.4", port);
      for (size_t i = 0; fd >= 0 && i < request.size() && !stop_; ++i) {
        send(fd, &request[i], 1, MSG_NOSIGNAL);
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
      }
      if (fd >= 0) close(fd);
    }
  }

  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

// The soak: a job whose collector is beset by garbage connections, a flood of idle ones past
// its descriptor limit and a /metrics client dribbling its request still gets every planted
// alert (HANG, then RECOVERED), its /metrics answers a scraper every time within a second,
// and the refusals are a few lines in its log, not thousands.
TEST(CollectCli, ASoakOfStrangersCostsNoPlantedAlert) {
  rlimit limit{};
  getrlimit(RLIMIT_NOFILE, &limit);
  if (limit.rlim_max < 2048) GTEST_SKIP() << "this process may not hold the 1,100 idle connections";
  limit.rlim_cur = limit.rlim_max;
  setrlimit(RLIMIT_NOFILE, &limit);
  TempDir dir, scratch;
  const std::string run_dir = dir.path() + "/run";
  const uint16_t collect_port = freePort(), metrics_port = freePort();
  Strangers strangers(collect_port, metrics_port);
  std::atomic<bool> job_done{false};
  int scrapes = 0, slow_scrapes = 0, hang_scrapes = 0;
  std::thread scraper([&] {
    while (!job_done) {
      const auto start = std::chrono::steady_clock::now();
      const std::string text = testutil::httpGet(metrics_port, "/metrics");
      if (!text.empty()) {
        ++scrapes;
        slow_scrapes += std::chrono::steady_clock::now() - start > std::chrono::seconds(1);
        hang_scrapes += text.find("commtrace_hang_seconds{") != std::string::npos;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
  });
  const ProgramResult job = testutil::runProgram(
      {"/usr/bin/prlimit", "--nofile=1024:1024", COMMTRACE_DRIVER, "--scenario", std::string(COMMTRACE_SCENARIO_DIR) + "/live_hang.json",
       "--plugin", COMMTRACE_SO, "--out", run_dir, "--time-scale", "1"},
      scratch.path(),
      {{"COMMTRACE_TOKEN", "test-token"},
       {"COMMTRACE_COLLECT_PORT", std::to_string(collect_port)},
       {"COMMTRACE_METRICS_PORT", std::to_string(metrics_port)}});
  job_done = true;
  scraper.join();
  strangers.stop();
  ASSERT_EQ(job.exit_code, 0) << job.err;
  const std::string log = job.out + job.err;
  EXPECT_NE(log.find("commtrace: HANG AllReduce #60 on world.0: ranks 0,1,3 waiting "), std::string::npos) << log;
  EXPECT_NE(log.find("commtrace: RECOVERED AllReduce #60 on world.0 went on after "), std::string::npos) << log;
  EXPECT_EQ(alertsOf(run_dir + "/alerts.jsonl").size(), 2u);
  size_t refusal_lines = 0;
  for (const std::string& line : testutil::linesOf(log)) refusal_lines += line.rfind("commtrace: collector: refused", 0) == 0;
  EXPECT_GE(strangers.garbage_connections, 500);
  EXPECT_GE(strangers.most_idle_held, 1100u);
  EXPECT_LE(refusal_lines, 2u) << strangers.garbage_connections << " garbage connections:\n" << log;
  EXPECT_GE(scrapes, 10);
  EXPECT_EQ(slow_scrapes, 0);
  EXPECT_GE(hang_scrapes, 1) << "the hang was on /metrics while it lasted";
  std::printf("soak: %d garbage connections, %zu idle held, %d scrapes (%d slow), %zu refusal lines\n", strangers.garbage_connections,
              strangers.most_idle_held, scrapes, slow_scrapes, refusal_lines);
}

}  // namespace
}  // namespace commtrace
