// A process's CUDA synchronisation calls (the preload face's cuda* wrappers) tallied as its
// file is read: per call kind and per stream, the count, failures and CPU time (total,
// longest, a sketch for the median). What the cuda_sync table shows, in memory that grows
// with the kinds and streams a process used, not with its calls.
//
// A _ptsz entry point (programs built with --default-stream per-thread) counts as its plain
// twin: the stream tells them apart, since its null stream is recorded as the per-thread
// default stream (2). cudaStreamLegacy (1) is the legacy default stream, counted as 0.
#pragma once

#include <cereal/cereal.hpp>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "tools/report/load/quantile_sketch.h"

namespace commtrace::report {

struct SyncDurations {
  uint64_t count = 0;
  uint64_t failed = 0;
  double total_us = 0;
  double max_us = 0;
  QuantileSketch us;  // for the median: exact up to QuantileSketch::kExactLimit distinct durations

  void add(double call_us, bool call_failed);
  void merge(const SyncDurations& other);
  template <class Archive>
  void serialize(Archive& ar) {
    ar(count, failed, total_us, max_us, us);
  }
};

struct SyncCallTally {
  bool takes_stream = false;
  SyncDurations all;
  std::map<uint64_t, SyncDurations> by_stream;  // calls that take a stream only
  template <class Archive>
  void serialize(Archive& ar) {
    ar(takes_stream, all, by_stream);
  }
};

class CudaSyncTally {
 public:
  // A call of `entry_point` ("cudaStreamSynchronize_ptsz", ...); other entry points are not
  // synchronisation calls and are left out.
  void add(std::string_view entry_point, uint64_t stream, uint64_t cpu_start_ns, uint64_t cpu_end_ns, bool failed);
  // By the kind of call they count as: "cudaStreamSynchronize", "cudaDeviceSynchronize",
  // "cudaEventSynchronize", "cudaStreamWaitEvent".
  const std::map<std::string_view, SyncCallTally>& calls() const { return calls_; }

  // Adds another tally of the same process: a shard's, of another stretch of its run.
  void merge(const CudaSyncTally& other);
  // A shard's state (tools/report/shard/): each call's kind by its name.
  template <class Archive>
  void serialize(Archive& ar) {
    cereal::size_type n = calls_.size();
    ar(cereal::make_size_tag(n));
    if constexpr (Archive::is_loading::value) {
      calls_.clear();
      for (cereal::size_type i = 0; i < n; ++i) {
        std::string kind;
        SyncCallTally tally;
        ar(kind, tally);
        const std::string_view known = kindNamed(kind);
        if (known.empty()) throw cereal::Exception("not a CUDA sync call: " + kind);
        calls_.emplace(known, std::move(tally));
      }
    } else {
      for (auto& [kind, tally] : calls_) ar(std::string(kind), tally);
    }
  }

 private:
  // The kind of that name as calls_ keys it (static storage); empty for a name that is none.
  static std::string_view kindNamed(std::string_view kind);
  std::map<std::string_view, SyncCallTally> calls_;
};

}  // namespace commtrace::report
