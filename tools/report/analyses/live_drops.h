// Live alerts for records lost before the trace file (`commtrace watch`, the job's
// collector): each chunk carries how many of its process's records were dropped so far (its
// rings full, its file unwritable). While that count rises, the report and the other alerts
// miss part of the rank's ops, and a rank whose rings fill is often itself the one in
// trouble (a host too busy to flush). A process whose count rose since the last look is
// DROPS, once per episode, from the chunk that showed it; RECOVERED once its file has gone
// quiet_after on (its own ops' time) without another loss. Judged on the files' own times,
// so a finished run's alerts are the same however it is read.
#pragma once

#include <cstdint>
#include <functional>
#include <map>

#include "tools/report/load/process_reader.h"

namespace commtrace::report {

struct DropAlert {
  enum class Kind : uint8_t { kDrops, kRecovered };
  Kind kind = Kind::kDrops;
  int32_t process = -1;       // index into RunModel::processes
  uint64_t since_utc_ns = 0;  // the chunk that first showed this episode's losses (recovered: the last that did)
  uint64_t lost = 0;          // in this episode, as far as seen
  uint64_t lost_total = 0;    // since the process started
};

class LiveDrops {
 public:
  struct Options {
    uint64_t quiet_after_ns = 10'000'000'000;
  };
  using OnAlert = std::function<void(const DropAlert&)>;

  LiveDrops(Options options, OnAlert on_alert) : options_(options), on_alert_(std::move(on_alert)) {}

  // Every batch a file gives, as it is read.
  void observe(const RecordBatch& batch);
  // Raises what rose since the last look, and recovers what has been quiet long enough.
  void judge();
  // Each process's records lost so far (those that lost any).
  std::map<int32_t, uint64_t> lostSoFar() const;

 private:
  struct Process {
    uint64_t latest_utc_ns = 0;     // its file's latest time read
    uint64_t last_loss_utc_ns = 0;  // the latest chunk that showed a loss
    uint64_t episode_start = 0;     // the count before this episode
    DropAlert alert;                // the episode's, once raised; its lost_total: the process's so far
    bool rose = false;              // since the last look
    bool dropping = false;          // alerted, not recovered
  };
  Options options_;
  OnAlert on_alert_;
  std::map<int32_t, Process> processes_;  // those that lost any
};

}  // namespace commtrace::report
