#include "interpose/process_life.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>

#include "core/export.h"
#include "core/real_symbol.h"
#include "core/settings.h"
#include "ringbuffer/ring_registry.h"
#include "sink/flusher.h"

namespace commtrace::interpose {
namespace {

// The pid of the process whose flusher runs, 0 while none does. A pid rather than a flag:
// a vforked child shares this memory (and runs no fork handler) but records nothing.
std::atomic<pid_t> g_recording_pid{0};

// One load in a process that never recorded; a getpid() in one that did.
bool recordingHere() {
  const pid_t pid = g_recording_pid.load(std::memory_order_acquire);
  return pid != 0 && pid == getpid();
}

// Before the process image ends or is replaced: what was recorded so far reaches the file,
// or COMMTRACE_EXIT_FLUSH_MS passes. Async-signal-safe.
void flushIfRecordingHere() {
  if (recordingHere()) RingRegistry::global().flushAndWait(settings().exit_flush_ms, /*closing=*/true);
}

// pthread_atfork child handler, on the forking thread, the only one the child has. Cheap
// and allocation-free, because it runs in every fork of every preloaded process.
void (*g_abandon_recorder)() = nullptr;  // set once, before any fork handler can run

bool g_sees_exit = false;  // set once by the constructor

void forgetParentRecorder() {
  if (g_abandon_recorder != nullptr) g_abandon_recorder();
  Flusher::forgetAfterFork();
  RingRegistry::global().forgetParentRingsAfterFork();
  g_recording_pid.store(0, std::memory_order_relaxed);
}

// --- SIGTERM, SIGINT, SIGHUP: how torchrun, Pool teardown, Ctrl-C and a lost terminal end a job ---

constexpr int kTerminatingSignals[] = {SIGTERM, SIGINT, SIGHUP};
constexpr size_t kSignalCount = sizeof kTerminatingSignals / sizeof kTerminatingSignals[0];

// What each signal did before our handler: written before the handler is installed, then
// only read, by the handler. Inherited by forked children along with the dispositions.
struct sigaction g_previous[kSignalCount];
std::atomic<bool> g_handlers_installed{false};  // in this process or an ancestor it forked from
std::atomic<bool> g_flushing_for_signal{false};

size_t signalIndex(int signal) {
  for (size_t i = 0; i < kSignalCount; ++i) {
    if (kTerminatingSignals[i] == signal) return i;
  }
  return 0;  // unreachable: the handler is installed for these signals only
}

bool isIgnored(const struct sigaction& action) {
  return (action.sa_flags & SA_SIGINFO) == 0 && action.sa_handler == SIG_IGN;
}

void setDefaultAction(int signal) {
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  sigaction(signal, &default_action, nullptr);
}

// What the signal would have done without us: the previous handler, called as the kernel
// would have called it (our handler runs with its mask and flags), or the default action,
// re-raised so the exit status reads "killed by <signal>" exactly.
void chainToPrevious(int signal, siginfo_t* info, void* context) {
  const struct sigaction& previous = g_previous[signalIndex(signal)];
  if ((previous.sa_flags & SA_RESETHAND) != 0) setDefaultAction(signal);
  if ((previous.sa_flags & SA_SIGINFO) != 0) {
    previous.sa_sigaction(signal, info, context);
  } else if (previous.sa_handler == SIG_DFL) {
    setDefaultAction(signal);
    raise(signal);  // pending while this handler blocks it; delivered as the mask is lifted
    sigset_t only;
    sigemptyset(&only);
    sigaddset(&only, signal);
    pthread_sigmask(SIG_UNBLOCK, &only, nullptr);
  } else if (previous.sa_handler != SIG_IGN) {
    previous.sa_handler(signal);
  }
}

// Async-signal-safe: atomics, a futex wait bounded by COMMTRACE_EXIT_FLUSH_MS, sigaction,
// raise. All I/O happens on the flusher thread, which blocks every signal.
void onTerminatingSignal(int signal, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  // A second terminating signal during the first one's flush (another thread, or this one
  // under SA_NODEFER) goes straight on to its own action.
  bool idle = false;
  if (g_flushing_for_signal.compare_exchange_strong(idle, true)) {
    flushIfRecordingHere();
    g_flushing_for_signal.store(false);
  }
  chainToPrevious(signal, info, context);
  errno = saved_errno;
}

void installSignalHandlers() {
  for (size_t i = 0; i < kSignalCount; ++i) {
    const int signal = kTerminatingSignals[i];
    struct sigaction previous;
    if (sigaction(signal, nullptr, &previous) != 0 || isIgnored(previous)) continue;  // ignored stays ignored
    if ((previous.sa_flags & SA_SIGINFO) != 0 && previous.sa_sigaction == &onTerminatingSignal) continue;
    g_previous[i] = previous;
    struct sigaction ours {};
    ours.sa_sigaction = &onTerminatingSignal;
    ours.sa_mask = previous.sa_mask;
    // SA_RESTART as before: Python, for one, wants EINTR so that its handlers run promptly.
    ours.sa_flags = SA_SIGINFO | (previous.sa_flags & (SA_RESTART | SA_ONSTACK | SA_NODEFER));
    sigaction(signal, &ours, nullptr);
  }
}

// --- exec: the image and its rings are about to be replaced (the trace file is O_CLOEXEC) ---

using ExecvFn = int(const char*, char* const*);
using ExecveFn = int(const char*, char* const*, char* const*);
constinit RealFunction<ExecveFn> g_execve{{"execve", nullptr, nullptr}};
constinit RealFunction<ExecvFn> g_execv{{"execv", nullptr, nullptr}};
constinit RealFunction<ExecvFn> g_execvp{{"execvp", nullptr, nullptr}};
constinit RealFunction<ExecveFn> g_execvpe{{"execvpe", nullptr, nullptr}};

// A failed exec returns and the process goes on recording: so a flush, not a stop.
template <class Fn, class... Args>
int flushThenExec(RealFunction<Fn>& real, Args... args) {
  flushIfRecordingHere();
  Fn* exec = real.get();
  if (exec == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  return exec(args...);
}

// --- _exit / _Exit: how Python's multiprocessing children and os._exit leave ---

[[noreturn]] void leaveProcess(int status) {
  flushIfRecordingHere();
  // glibc's _exit is exactly this system call. Made directly rather than through
  // dlsym(RTLD_NEXT, "_exit"): no lookup (and no loader lock) on a path that forked and
  // vforked children and signal handlers take. A tool preloaded after us that also wraps
  // _exit is bypassed.
  for (;;) syscall(SYS_exit_group, status);
}

}  // namespace

bool seesExit() { return g_sees_exit; }

void prepareProcessLife(bool preloaded, void (*abandon_recorder)()) {
  g_abandon_recorder = abandon_recorder;
  g_sees_exit = preloaded;
  pthread_atfork(nullptr, nullptr, &forgetParentRecorder);
  if (preloaded) {
    g_execve.get();
    g_execv.get();
    g_execvp.get();
    g_execvpe.get();
  }
}

void recordingStarted() {
  g_recording_pid.store(getpid(), std::memory_order_release);
  if (!g_handlers_installed.exchange(true)) installSignalHandlers();
}

void recordingStopped() { g_recording_pid.store(0, std::memory_order_release); }

}  // namespace commtrace::interpose

using commtrace::interpose::flushThenExec;


COMMTRACE_EXPORT void _exit(int status) { commtrace::interpose::leaveProcess(status); }
COMMTRACE_EXPORT void _Exit(int status) noexcept { commtrace::interpose::leaveProcess(status); }

COMMTRACE_EXPORT int execve(const char* path, char* const argv[], char* const envp[]) noexcept {
  return flushThenExec(commtrace::interpose::g_execve, path, argv, envp);
}
COMMTRACE_EXPORT int execv(const char* path, char* const argv[]) noexcept {
  return flushThenExec(commtrace::interpose::g_execv, path, argv);
}
COMMTRACE_EXPORT int execvp(const char* file, char* const argv[]) noexcept {
  return flushThenExec(commtrace::interpose::g_execvp, file, argv);
}
COMMTRACE_EXPORT int execvpe(const char* file, char* const argv[], char* const envp[]) noexcept {
  return flushThenExec(commtrace::interpose::g_execvpe, file, argv, envp);
}
