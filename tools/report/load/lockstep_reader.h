// Reads every file of a run at once, a chunk at a time, always from the file that has come
// least far into the run (RecordBatch::position_ns), on several threads. The files then
// move through the run together, so an op instance is joined soon after its first record
// is read and the instances open at any moment are a window of the run, not the whole
// of it. (Reading one file after another made every instance wait for the last file.)
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <variant>
#include <vector>

#include "tools/report/load/process_reader.h"

namespace commtrace::report {

// A file read to its end: what belongs to the process alone.
struct FileDone {
  int process = -1;
  uint64_t file_bytes = 0;  // consumed after the last batch
  bool opened = false;
  std::string error;
  ProcessInfo info;
  ProcessTimeline timeline;
};
using LoadMessage = std::variant<RecordBatch, FileDone>;

// Reads `paths` (process i is paths[i]) on up to `threads` threads and calls deliver()
// with each file's batches, in order per file, and then its FileDone, all on the calling
// thread. At most `max_open` files are open at a time (the rest wait their turn, and do
// not move in step with the others). `options`: what each process's reader keeps.
void readInLockstep(const std::vector<std::string>& paths, SharedNames& names, const ProcessReadOptions& options, unsigned threads,
                    size_t max_open, const std::function<void(LoadMessage&)>& deliver);

// How many files this process may hold open: the soft RLIMIT_NOFILE, raised to the hard
// one, less some for everything else.
size_t openFileBudget();

}  // namespace commtrace::report
