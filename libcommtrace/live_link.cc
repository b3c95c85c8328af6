#include "libcommtrace/live_link.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include "core/job_secret.h"
#include "core/process_identity.h"
#include "core/settings.h"
#include "sink/collector_address.h"

extern char** environ;

namespace commtrace::library {
namespace {

DigestSender* g_link = nullptr;  // never destroyed: the flusher may outlive every destructor
collect::LinkKey g_token_key{};
bool g_has_token = false;
bool g_start_collector = false;
std::string g_run_dir;
std::string g_master;  // MASTER_ADDR
pid_t g_collector = 0;  // the collector this process started

// `commtrace` beside the library: <prefix>/lib/libcommtrace.so -> <prefix>/bin/commtrace.
std::string collectorProgram() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&openLiveLink), &info) == 0 || info.dli_fname == nullptr) return {};
  std::string path = info.dli_fname;
  const size_t slash = path.rfind('/');
  path = slash == std::string::npos ? std::string(".") : path.substr(0, slash);
  return path + "/../bin/commtrace";
}

// Starts `commtrace collect` with the key on descriptor 3, the job's environment less
// LD_PRELOAD (it must not trace itself) and no signal blocked (this thread blocks all). It
// writes to the job's stderr only: its stdin and stdout are /dev/null, so that a collector
// that outlives the job holds no more of the job's output open than it must.
bool startCollector(const collect::LinkKey& key, const std::string& master) {
  const std::string program = collectorProgram();
  if (program.empty() || access(program.c_str(), X_OK) != 0) {
    std::fprintf(stderr, "commtrace: cannot start the live collector: no program at %s; live alerts are off\n", program.c_str());
    return false;
  }
  int key_pipe[2];
  if (pipe2(key_pipe, O_CLOEXEC) != 0) return false;
  const char* bind = std::getenv("COMMTRACE_COLLECT_BIND");
  const std::string host = collectorListenHost(bind != nullptr ? bind : "", master);
  const std::string listen = (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(settings().collect_port);
  const std::string parent = std::to_string(getpid());
  const std::string alerts = g_run_dir + "/alerts.jsonl";
  const std::string metrics = "0.0.0.0:" + std::to_string(settings().metrics_port);
  std::vector<const char*> argv = {program.c_str(), "collect", "--listen", listen.c_str(), "--key-fd", "3",
                                   "--parent-pid", parent.c_str(), "--alerts", alerts.c_str()};
  if (settings().metrics_port != 0) argv.insert(argv.end(), {"--metrics", metrics.c_str()});
  argv.push_back(nullptr);
  std::vector<char*> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e)
    if (std::string_view(*e).rfind("LD_PRELOAD=", 0) != 0) env.push_back(*e);
  env.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, key_pipe[0], 3);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK);
  pid_t child = 0;
  const int spawned = posix_spawn(&child, program.c_str(), &actions, &attributes, const_cast<char* const*>(argv.data()), env.data());
  if (spawned == 0) g_collector = child;
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  close(key_pipe[0]);
  if (spawned == 0) {
    char hex[collect::kKeyHexDigits];
    collect::keyToHex(key, hex);
    (void)!write(key_pipe[1], hex, sizeof hex);
  } else {
    std::fprintf(stderr, "commtrace: cannot start the live collector %s: %s; live alerts are off\n", program.c_str(), std::strerror(spawned));
  }
  close(key_pipe[1]);
  return spawned == 0;
}

}  // namespace

DigestSender* openLiveLink(const std::string& run_dir) {
  if (!settings().live) return nullptr;
  const char* standalone = std::getenv("COMMTRACE_COLLECT_ADDR");
  const char* master = std::getenv("MASTER_ADDR");
  const bool has_standalone = standalone != nullptr && *standalone != '\0';
  if (!has_standalone && (master == nullptr || *master == '\0')) return nullptr;
  if (const char* token = std::getenv("COMMTRACE_TOKEN"); token != nullptr && *token != '\0') {
    g_token_key = collect::keyFromToken(token);
    g_has_token = true;
  }
  g_start_collector = !has_standalone && processIdentity().rank == 0;
  g_run_dir = run_dir;
  g_master = master != nullptr ? master : "";
  // With rank 0's collector, rank 0 alone says when the link fails (it started the collector,
  // or said why it could not): a thousand ranks do not each add the same line to the log.
  g_link = new DigestSender(DigestSender::Options{.host = has_standalone ? standalone : master,
                                                  .port = static_cast<uint16_t>(settings().collect_port),
                                                  .quiet = !has_standalone && processIdentity().rank != 0});
  return g_link;
}

// A collector ends by itself when it sees this process gone (--parent-pid), unless it is
// stopped (SIGSTOP, a debugger, a frozen cgroup): then it would hold the job's stderr open
// after the job, and whatever reads the job's log would wait for the end of it forever.
void endLiveLink() {
  if (g_collector <= 0) return;
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(g_collector));
  char stat[512] = {};
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  const ssize_t n = fd < 0 ? -1 : read(fd, stat, sizeof stat - 1);
  if (fd >= 0) close(fd);
  const char* name_end = n > 0 ? std::strrchr(stat, ')') : nullptr;  // "PID (NAME) STATE ..."
  if (name_end != nullptr && (name_end[2] == 'T' || name_end[2] == 't')) kill(g_collector, SIGKILL);
}

void forgetLiveLinkAfterFork() {
  if (g_link != nullptr) g_link->abandonAfterFork();
  g_link = nullptr;
  g_start_collector = false;
  g_collector = 0;
  forgetJobAfterFork();
}

void tendLiveLink(uint64_t now_ns) {
  if (g_link == nullptr || g_link->keyed() || !communicatorMade()) return;
  collect::LinkKey key = g_token_key;
  if (!g_has_token) {
    const std::optional<JobSecret> secret = jobSecret();
    if (!secret) return;  // loaded as NCCL's plugin only: no ncclUniqueId seen, and no token
    key = collect::keyFromUniqueId(*secret);
  }
  if (g_start_collector && !startCollector(key, g_master)) {
    g_link = nullptr;  // nothing to send to
    return;
  }
  g_link->setKey(key, now_ns);
}

}  // namespace commtrace::library
