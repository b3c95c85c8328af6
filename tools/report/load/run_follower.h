// Follows a run directory while its job writes it (`commtrace watch`): files are admitted as
// they appear, every poll() reads each as far as it has been written, a chunk at a time from
// the file furthest behind, as the report's loader does. The watermark says up to when every file still being written has been read, so
// that a window of the run can be judged once it has passed.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "sink/byte_source.h"
#include "tools/report/load/lockstep_reader.h"
#include "tools/report/load/op_joiner.h"
#include "tools/report/load/process_reader.h"
#include "tools/report/load/run_model.h"

namespace commtrace::report {

class RunFollower {
 public:
  // run: filled as files appear (processes, communicators); sink: every joined op. An empty
  // dir: no directory is listed, the streams come from admit() alone. At most max_open
  // descriptors are held: with more files, each is reopened when its turn comes.
  RunFollower(std::string dir, RunModel& run, JoinedOpSink& sink, size_t max_open = openFileBudget());
  ~RunFollower();

  // Also hands every batch read, as read, to `observer` (the live hang alerts').
  void observeBatches(std::function<void(const RecordBatch&)> observer) { observer_ = std::move(observer); }

  // Follows a stream that is not a file in the directory (a live collector's, in memory);
  // false, with the reason on err, when it does not begin with a trace header.
  bool admit(const std::string& name, std::shared_ptr<ByteSource> source, std::ostream& err);
  // Admits new files and reads what every file gained since; false, with the reason on err,
  // when the directory cannot be read.
  bool poll(std::ostream& err);
  // Every file not yet closed nor silent has been read up to this (UTC ns): later ops may
  // still come only after it. 0 before any file has an op; the latest op of all when every
  // file is closed or silent. A silent file (nothing read from it for kSilentAfter, where a
  // live process writes a heartbeat every second: its process died or froze) holds nobody's
  // judgment back; it counts again once it grows.
  uint64_t watermark() const;
  static constexpr std::chrono::seconds kSilentAfter{10};
  void setSilentAfter(std::chrono::steady_clock::duration d) { silent_after_ = d; }  // tests
  // Files not closed from which nothing was read for `quiet` or longer.
  size_t silentFiles(std::chrono::steady_clock::duration quiet) const;
  // Files admitted, and how many of them their writers have closed (the job ended).
  size_t files() const { return files_.size(); }
  size_t closedFiles() const;
  // Hands on the instances still open; call once, when done.
  void finish();

 private:
  struct File;
  void admitNewFiles();
  void follow(const std::string& path, std::unique_ptr<ProcessReader> reader);
  bool directoriesChanged() const;
  void readInStep();

  std::string dir_;
  RunModel& run_;
  SharedNames names_;
  ProcessReadOptions options_;
  OpJoiner joiner_;
  DecodedChunk scratch_;
  DescriptorPool descriptors_;  // outlives files_, whose readers hold its descriptors
  std::vector<std::unique_ptr<File>> files_;
  std::vector<std::string> seen_;  // paths admitted, sorted (one not readable yet is tried again)
  std::function<void(const RecordBatch&)> observer_;
  std::vector<std::pair<std::string, std::filesystem::file_time_type>> directories_;  // as last listed
  bool retry_ = false;  // a file found could not be opened yet
  std::chrono::steady_clock::duration silent_after_ = kSilentAfter;
};

}  // namespace commtrace::report
