// How recording survives the ways a process ends or multiplies: fork (the child forgets the
// parent's recorder and starts its own only if it records), exec, _exit/_Exit (flush with a
// bounded wait), SIGTERM/SIGINT/SIGHUP (flush with a bounded wait, then the signal's
// previous handler or default action, so exit statuses do not change). Normal exit is the
// library's destructor (commtrace_stop). SIGKILL loses at most one flush period.
#pragma once

namespace commtrace::interpose {

// The constructor's, once per process image: registers the fork handler (before anything
// can record, so no fork can copy a half-started recorder), and, when the library was
// preloaded (its exec wrappers are what the program calls), resolves the real exec
// functions now, so a forked or vforked child never has to look them up.
// abandon_recorder is the library's, called first in a forked child: it drops the parent's
// recorder (leaked: its thread does not exist there, so it can be neither stopped nor
// destroyed) and its lock (which a vanished parent thread may hold).
void prepareProcessLife(bool preloaded, void (*abandon_recorder)());

// Whether _exit, _Exit and exec pass through the wrappers that flush first: only when the
// library was preloaded (as NCCL's plugin, dlopened, its symbols are not the program's).
bool seesExit();

// commtrace_start's, once a flusher runs in this process: from now on the exit paths
// flush. The first time in the process tree, installs the signal handlers (never before:
// processes that never record keep their signal dispositions untouched).
void recordingStarted();
// commtrace_stop's, once the flusher has stopped.
void recordingStopped();

}  // namespace commtrace::interpose
