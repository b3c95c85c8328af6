/* The explicit C face of libcommtrace.so: start and stop recording by hand, for programs
 * that link or dlopen commtrace instead of preloading it. */
#ifndef COMMTRACE_CAPTURE_API_H
#define COMMTRACE_CAPTURE_API_H

#ifdef __cplusplus
extern "C" {
#endif

/* Starts the flusher writing this process's trace file into dir (NULL: $COMMTRACE_DIR as
 * the library found it at load, else "commtrace-run/<job id>"), every $COMMTRACE_FLUSH_MS. Returns 0
 * on success, -1 if recording already runs. A directory that cannot be written is reported
 * once on stderr and records are counted as dropped. */
int commtrace_start(const char* dir);

/* Drains every ring, writes the last chunk and stops the flusher, waiting at most
 * $COMMTRACE_EXIT_FLUSH_MS (a stuck disk costs one stderr line, never a hang). Safe to
 * call twice. */
void commtrace_stop(void);

/* The version string of this library, e.g. "0.1.0". */
const char* commtrace_version(void);

#ifdef __cplusplus
}

namespace commtrace::library {
// In a forked child (the fork handler): drops the parent's recorder, which belongs to a
// thread that does not exist here.
void abandonRecorderInForkedChild();
}  // namespace commtrace::library
#endif

#endif
