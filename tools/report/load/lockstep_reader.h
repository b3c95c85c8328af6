// Reads every file of a run at once, a chunk at a time, always from the file that has come
// least far into the run (RecordBatch::position_ns), on several threads. The files then
// move through the run together, so an op instance is joined soon after its first record
// is read and the instances open at any moment are a window of the run, not the whole
// of it. (Reading one file after another made every instance wait for the last file.)
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
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
// A file's end comes once and is large (its ProcessInfo): held apart, a message waiting in a
// file's queue is a batch's size, not the end's.
using LoadMessage = std::variant<RecordBatch, std::unique_ptr<FileDone>>;

// How far each file's process has run ahead of the others in ops: its seats in op instances
// still open. Time alone does not keep the files together: processes whose clocks do not run
// alike (ranks played unsynchronized, a host's clock stepped) are at different ops at one
// time, and read by time, the one ahead opened instance after instance that the others
// would fill only much later (16 ranks, 20,000 steps: 0.9 GB). Counted by the joiner, on
// the thread that also chooses which file's batch it takes next.
class FileLeads {
 public:
  explicit FileLeads(size_t files) : seats_(files, 0) {}
  // A seat of the file's process filled (+1) or handed on (-1).
  void seat(int file, int64_t delta) {
    if (holds(file)) seats_[static_cast<size_t>(file)] += delta;
  }
  uint64_t of(int file) const {
    if (!holds(file)) return 0;
    const int64_t lead = seats_[static_cast<size_t>(file)];
    return lead > 0 ? static_cast<uint64_t>(lead) : 0;
  }

 private:
  bool holds(int file) const { return file >= 0 && static_cast<size_t>(file) < seats_.size(); }
  std::vector<int64_t> seats_;
};

// Reads `paths` (process i is paths[i]) on up to `threads` threads and calls deliver()
// with each file's batches, in order per file, and then its FileDone, all on the calling
// thread. Which file's batch comes next depends on the files alone (what was delivered
// before), never on which thread finished decoding first: the threads decode ahead, and
// the same files are delivered in the same order every time (so every figure of the report
// is the same). At most `max_open` descriptors are held at a time: with more files, each
// is still read in step, its descriptor closed for another's and reopened when its turn
// comes (sink/byte_source.h, DescriptorPool). `options`: what each process's reader keeps. With
// `leads` (kept by deliver's joiner), a file far ahead of another in ops waits for it.
void readInLockstep(const std::vector<std::string>& paths, SharedNames& names, const ProcessReadOptions& options, unsigned threads,
                    size_t max_open, const std::function<void(LoadMessage&)>& deliver, FileLeads* leads = nullptr);

// How many files this process may hold open: the soft RLIMIT_NOFILE, raised to the hard
// one, less some for everything else.
size_t openFileBudget();

}  // namespace commtrace::report
