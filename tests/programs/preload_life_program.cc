// A program the process-life tests run under LD_PRELOAD=libcommtrace.so. It records
// collectives through the plugin face it finds in itself (dlsym(RTLD_DEFAULT,
// "ncclProfiler_v5"), as NCCL finds a preloaded plugin given NCCL_PROFILER_PLUGIN=
// STATIC_PLUGIN), then leaves the way its arguments say. Without the preload it finds no
// plugin, records nothing and leaves the same way: that is how a test learns the exit
// status the program has without commtrace.
//
//   preload_life_program MODE [ARG]
//     return N            record, return N from main
//     exit-from-thread N  record, exit(N) from a second thread while main waits in pause()
//     _exit N, _Exit N    record, leave through that call
//     exec FN STATUS      record, then FN (execve, execv, execvp or execvpe) of
//                         sh -c "exit STATUS"
//     wait-for-signal     record, print "recorded", wait in pause() for a signal
//     siginfo-handler     install an SA_SIGINFO handler for SIGTERM first (it _exits with
//                         40 + the signal number if its siginfo names the signal and a
//                         sender), then as wait-for-signal
//     fork record|idle    record, fork; the child records on a communicator of its own (or
//                         not) and exit(0)s; the parent prints both pids, waits, records
//                         more and returns 0
//     job-id              record, print $COMMTRACE_JOB_ID
//     dlopen PATH         not preloaded: dlopen PATH as NCCL does, record through it,
//                         print what became of the variables a preload would set
//     dlopen-forks PATH N HOW  not preloaded: dlopen PATH, record, fork N children one
//                         after another, each recording 3 collectives on a communicator
//                         of its own and leaving by _exit(0), after finalizing it (HOW
//                         "finalize") or not ("no-finalize")
//     no-threads N        at a process limit of 0 (as user nobody, when run as root: the
//                         limit does not bind root), record, return N: no thread can start
//     little-memory N     under an address-space limit of what it uses plus 64 MiB, record
//                         from 200 threads at once (small stacks of their own), return N
//     many-comms N        record one collective on each of N communicators of its own
//     short-threads N     record one collective from each of N threads in turn, each
//                         exiting after it; print "peak_rss_mb M" (VmHWM) and return 0
//
// Every recording is kCollsPerBurst AllReduce collectives, seq numbers counting up from
// where the process's previous burst stopped.
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "nccl-plugin/profiler_abi.h"

namespace {

using namespace commtrace::nccl;

constexpr uint64_t kParentComm = 0xC0DE0001;
constexpr uint64_t kChildComm = 0xC0DE0002;
constexpr uint64_t kCollsPerBurst = 100;

const ProfilerV5* g_plugin = nullptr;

void* openContext(uint64_t comm_id) {
  static int mask = 0;  // NCCL's one process-wide activation mask
  void* context = nullptr;
  return g_plugin->init(&context, comm_id, &mask, "life", 1, 1, 0, nullptr) == kSuccess ? context : nullptr;
}

void recordColls(void* context, uint64_t first_seq, uint64_t n) {
  for (uint64_t seq = first_seq; seq < first_seq + n; ++seq) {
    EventDescrV5 descr{};
    descr.type = kColl;
    // No API parent and no channels: the Coll's record is written at its stop.
    descr.u.coll = CollV5{CollV4{seq, "AllReduce", nullptr, nullptr, 1024, 0, "ncclFloat32", 0, 8, "RING", "SIMPLE"},
                          nullptr};
    void* handle = nullptr;
    g_plugin->start_event(context, &handle, &descr);
    g_plugin->stop_event(handle);
  }
}

// Records kCollsPerBurst collectives on comm_id (a new communicator context per call).
void recordBurst(uint64_t comm_id, uint64_t first_seq) {
  if (g_plugin == nullptr) return;
  if (void* context = openContext(comm_id)) recordColls(context, first_seq, kCollsPerBurst);
}

// Runs fn on `threads` threads with 256 KiB stacks (under an address-space limit, the default
// 8 MiB would not fit), `at_once` of them running together.
template <class Fn>
void onThreads(size_t threads, size_t at_once, Fn fn) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 << 10);
  struct Call {
    Fn* fn;
    size_t index;
  };
  for (size_t first = 0; first < threads; first += at_once) {
    std::vector<pthread_t> running;
    std::vector<Call> calls;
    calls.reserve(at_once);
    for (size_t i = first; i < std::min(threads, first + at_once); ++i) {
      calls.push_back({&fn, i});
      pthread_t t;
      if (pthread_create(&t, &attr, [](void* c) -> void* {
            auto* call = static_cast<Call*>(c);
            (*call->fn)(call->index);
            return nullptr;
          }, &calls.back()) == 0)
        running.push_back(t);
    }
    for (pthread_t t : running) pthread_join(t, nullptr);
  }
  pthread_attr_destroy(&attr);
}

long statusKb(const std::string& field) {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
  return -1;
}

int recordWithoutThreads(int status) {
  if (getuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) return 3;
  const rlimit none{0, 0};
  if (setrlimit(RLIMIT_NPROC, &none) != 0) return 3;
  recordBurst(kParentComm, 0);
  return status;
}

int recordWithLittleMemory(int status) {
  const rlim_t used = static_cast<rlim_t>(statusKb("VmSize")) << 10;
  const rlimit limit{used + (64u << 20), used + (64u << 20)};
  if (setrlimit(RLIMIT_AS, &limit) != 0) return 3;
  if (g_plugin == nullptr) return status;
  void* context = openContext(kParentComm);
  if (context == nullptr) return status;
  onThreads(200, 200, [&](size_t i) { recordColls(context, i * kCollsPerBurst, kCollsPerBurst); });
  return status;
}

int recordFromShortThreads(size_t threads) {
  void* context = g_plugin != nullptr ? openContext(kParentComm) : nullptr;
  onThreads(threads, 1, [&](size_t i) {
    if (context != nullptr) recordColls(context, i, 1);
  });
  printf("peak_rss_mb %ld\n", statusKb("VmHWM") >> 10);
  return 0;
}

[[noreturn]] void waitForever() {
  for (;;) pause();
}

void exitNamingTheSignal(int signal, siginfo_t* info, void*) {
  _exit(info != nullptr && info->si_signo == signal && info->si_pid > 0 ? 40 + signal : 1);
}

void installSiginfoHandler() {
  struct sigaction action {};
  action.sa_sigaction = &exitNamingTheSignal;
  action.sa_flags = SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
}

int argInt(int argc, char** argv, int index) { return index < argc ? atoi(argv[index]) : 0; }

int execAs(const std::string& fn, int status) {
  const std::string script = "exit " + std::to_string(status);
  char sh[] = "sh", dash_c[] = "-c";
  char* args[] = {sh, dash_c, const_cast<char*>(script.c_str()), nullptr};
  if (fn == "execve") execve("/bin/sh", args, environ);
  if (fn == "execv") execv("/bin/sh", args);
  if (fn == "execvp") execvp("sh", args);
  if (fn == "execvpe") execvpe("sh", args, environ);
  perror("exec");
  return 127;
}

int forkAndWait(bool child_records) {
  fflush(stdout);
  const pid_t child = fork();
  if (child < 0) return 1;
  if (child == 0) {
    if (child_records) recordBurst(kChildComm, 0);
    exit(0);  // the library's destructor runs here: it must not touch the parent's recorder
  }
  int status = 0;
  if (waitpid(child, &status, 0) != child) return 1;
  printf("parent %d\nchild %d status %d\n", static_cast<int>(getpid()), static_cast<int>(child), status);
  recordBurst(kParentComm, kCollsPerBurst);
  return 0;
}

bool dlopenPlugin(const char* path) {
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (handle != nullptr) g_plugin = static_cast<const ProfilerV5*>(dlsym(handle, "ncclProfiler_v5"));
  return g_plugin != nullptr;
}

int forkChildrenThatExitAtOnce(int children, bool finalize) {
  recordBurst(kParentComm, 0);
  for (int i = 0; i < children; ++i) {
    const pid_t child = fork();
    if (child < 0) return 1;
    if (child == 0) {
      void* context = openContext(kChildComm);
      if (context != nullptr) recordColls(context, 0, 3);
      if (context != nullptr && finalize) g_plugin->finalize(context);
      _exit(0);
    }
    int status = 0;
    if (waitpid(child, &status, 0) != child || status != 0) return 1;
  }
  return 0;
}

// Paced as a job makes communicators (1,000 every 50 ms), so that the ring keeps up.
int recordOnManyComms(int comms) {
  for (int i = 0; g_plugin != nullptr && i < comms; ++i) {
    if (void* context = openContext(kChildComm + 1 + static_cast<uint64_t>(i))) recordColls(context, 0, 1);
    if (i % 1000 == 999) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return 0;
}

int reportVariablesAfterDlopen(const char* path) {
  if (!dlopenPlugin(path)) return 2;
  recordBurst(kParentComm, 0);
  for (const char* name : {"NCCL_PROFILER_PLUGIN", "NVTX_INJECTION64_PATH", "COMMTRACE_JOB_ID"}) {
    const char* value = getenv(name);
    printf("%s=%s\n", name, value != nullptr ? value : "<unset>");
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "dlopen") return argc > 2 ? reportVariablesAfterDlopen(argv[2]) : 2;
  if (mode == "dlopen-forks") {
    if (argc < 5 || !dlopenPlugin(argv[2])) return 2;
    return forkChildrenThatExitAtOnce(std::atoi(argv[3]), std::string(argv[4]) == "finalize");
  }

  if (mode == "siginfo-handler") installSiginfoHandler();  // before recording starts, so commtrace chains to it
  g_plugin = static_cast<const ProfilerV5*>(dlsym(RTLD_DEFAULT, "ncclProfiler_v5"));
  if (mode == "many-comms") return recordOnManyComms(argInt(argc, argv, 2));
  if (mode == "no-threads") return recordWithoutThreads(argInt(argc, argv, 2));
  if (mode == "little-memory") return recordWithLittleMemory(argInt(argc, argv, 2));
  if (mode == "short-threads") return recordFromShortThreads(static_cast<size_t>(argInt(argc, argv, 2)));
  recordBurst(kParentComm, 0);
  if (mode == "return") return argInt(argc, argv, 2);
  if (mode == "_exit") _exit(argInt(argc, argv, 2));
  if (mode == "_Exit") _Exit(argInt(argc, argv, 2));
  if (mode == "exec") return argc > 3 ? execAs(argv[2], argInt(argc, argv, 3)) : 2;
  if (mode == "fork") return forkAndWait(argc > 2 && std::string(argv[2]) == "record");
  if (mode == "exit-from-thread") {
    const int status = argInt(argc, argv, 2);
    std::thread([status] { exit(status); }).detach();
    waitForever();
  }
  if (mode == "wait-for-signal" || mode == "siginfo-handler") {
    printf("recorded\n");
    fflush(stdout);
    waitForever();
  }
  if (mode == "job-id") {
    const char* id = getenv("COMMTRACE_JOB_ID");
    printf("%s\n", id != nullptr ? id : "<unset>");
    return 0;
  }
  fprintf(stderr, "preload_life_program: unknown mode '%s'\n", mode.c_str());
  return 2;
}
