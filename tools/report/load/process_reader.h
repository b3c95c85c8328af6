// Reads one trace file (one process) chunk by chunk on a loader thread and turns each
// chunk into a RecordBatch: the few record kinds the report joins across ranks, projected
// to compact rows with names interned into the run's NamePool. What belongs to the
// process alone (header, record counts, drops, clock maps, compute kernels, phases) it
// keeps itself and hands over at the end with finish().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <unordered_map>
#include <vector>

#include "sink/reader.h"
#include "tools/report/load/gpu_gaps.h"
#include "tools/report/load/kernel_clock_match.h"
#include "tools/report/load/phase_keeper.h"
#include "tools/report/load/phase_path_tally.h"
#include "tools/report/load/stack_tally.h"
#include "tools/report/load/run_model.h"
#include "tools/trace_tally.h"

namespace commtrace::report {

// The run's NamePool, shared by the loader threads.
class SharedNames {
 public:
  explicit SharedNames(NamePool& pool) : pool_(pool) {}
  NameId intern(std::string_view s) {
    std::lock_guard lock(mutex_);
    return pool_.intern(s);
  }

 private:
  std::mutex mutex_;
  NamePool& pool_;
};

struct CommInfoRow {
  uint64_t comm_id = 0;
  NameId name = 0;
  int32_t size = 0;
  int32_t rank = -1;         // in the communicator
  int32_t global_rank = -1;  // -1: not known
  int32_t n_nodes = 0;
};

// One CollRecord; `view` carries the rank's times (comm_rank is filled by the merger).
struct CollRow {
  uint64_t comm_id = 0;
  uint64_t seq = 0;
  uint64_t op_index = 0;
  uint64_t count = 0;
  uint64_t bytes = 0;
  NameId func = 0, datatype = 0, algo = 0, proto = 0;
  int32_t root = -1;
  uint8_t n_channels = 0;
  bool graph_captured = false;
  MemberView view;
  NameId path = 0;  // the NVTX path it was issued under (CollInstance::path)
};

struct P2pRow {
  uint64_t comm_id = 0;
  uint64_t op_index = 0;
  uint64_t count = 0;
  uint64_t bytes = 0;
  NameId api_func = 0;  // parent_func, else "Send"
  NameId datatype = 0;
  int32_t peer = -1;  // comm rank of the other side
  bool is_send = false;
  uint8_t n_channels = 0;
  MemberView view;
  NameId path = 0;
};

// The flusher's report of the oldest op in flight on a communicator (InFlightRecord), as UTC.
struct InFlightRow {
  uint64_t comm_id = 0;
  uint64_t op_index = 0;
  uint64_t seq = 0;
  uint64_t start_utc_ns = 0;
  uint64_t seen_utc_ns = 0;
  NameId func = 0;
  int32_t peer = -1;       // send/receive: the peer's comm rank; -1 for collectives
  uint32_t in_flight = 0;  // 0: the communicator's earlier report is cleared
};

// One chunk's rows of one process; comm infos first, so that a chunk's own ops can be placed.
struct RecordBatch {
  int process = -1;
  uint64_t file_bytes = 0;  // of the file consumed since the previous batch (progress)
  // How far into the run the file has come: the latest CPU time of its ops so far, as
  // CLOCK_REALTIME (comparable across hosts, unlike CLOCK_MONOTONIC); 0 before any op.
  uint64_t position_ns = 0;
  std::vector<CommInfoRow> comm_infos;
  std::vector<CollRow> colls;
  std::vector<P2pRow> p2ps;
  std::vector<InFlightRow> in_flight;
  uint64_t heartbeat_utc_ns = 0;  // the chunk's latest clock sample: its writer was alive then (0: none)
  bool closed = false;            // its writer marked the file closed with this chunk
  uint64_t dropped_records = 0;   // the process's records lost before its file so far (ring full, write failed)
};

// CPU times are the process's CLOCK_MONOTONIC; the header pairs it with CLOCK_REALTIME.
int64_t utcMinusCpu(const trace::v1::FileHeader& header);

// The file header's part of a ProcessInfo (who wrote the file).
void describeProcess(const trace::v1::FileHeader& header, const std::string& path, ProcessInfo& info);

// What a process's reader keeps of what belongs to the process alone.
struct ProcessReadOptions {
  TimeWindow window;  // the CUDA sync calls it tallies: those that started in it
  // NVTX ranges: all, or only those that can be steps (phase_keeper.h), step_range naming
  // the step range (--step-range; empty: the default rule).
  bool keep_all_phases = true;
  std::function<bool(std::string_view)> step_range;
  // Compute kernels: kept in the timeline, or only counted (the report's overlap pass reads
  // them from the file again).
  bool keep_compute = true;
  // MemberView::gpu_gap_ns for the straggler classes (the report's and the live alerts'), and
  // NCCL's kernels matched to the ops' ends, which only the report reads (a live collector
  // would hold 32 KB of op ends per process for it, 32 MB at 1,024 ranks).
  bool gpu_gaps = true;
  size_t gap_window = GpuGapTracker::kWindow;  // GpuGapTracker's
  bool match_kernel_clocks = true;
  size_t clock_probe_ops = KernelClockMatcher::kOpEndsBeforeKernels;  // KernelClockMatcher's

  // The report's: gap window and probe sized by the run's width (width_budget.h).
  static ProcessReadOptions forWidth(size_t processes);
};

class ProcessReader {
 public:
  ProcessReader(SharedNames& names, int process, const ProcessReadOptions& options)
      : names_(names),
        process_(process),
        window_(options.window),
        keep_compute_(options.keep_compute),
        gpu_gaps_(options.gpu_gaps),
        clock_match_(options.match_kernel_clocks ? std::make_unique<KernelClockMatcher>(options.clock_probe_ops) : nullptr),
        gaps_(options.gap_window),
        phases_(options.keep_all_phases, options.step_range) {}

  // false with the reader's "commtrace: ..." message when the file is not a readable trace.
  // With `descriptors`, its descriptor is that pool's (sink/byte_source.h).
  bool open(const std::string& path, std::string& error, DescriptorPool* descriptors = nullptr);
  // The same for a stream held in memory (the live collector's), `name` standing for its path.
  bool open(const std::string& name, std::shared_ptr<ByteSource> source, std::string& error);
  // The next chunk's rows; false at the end of the file. The chunk is decoded into
  // `scratch`, the calling thread's: a run's files are all open at once, and a decoded
  // chunk per file (up to 16,384 records of 128 bytes) would hold 2 GiB at 1,024 ranks.
  bool next(RecordBatch& batch, DecodedChunk& scratch);
  // Everything about the process once the file is read.
  void finish(ProcessInfo& info, ProcessTimeline& timeline);
  // A file still being written: next() goes on with what was appended (TraceReader::refresh).
  bool refresh() { return reader_.refresh(); }
  // Its writer marked its last chunk closing: the process stopped recording.
  bool closed() const { return reader_.state() == TraceReader::State::kClosed; }

  const trace::v1::FileHeader& header() const { return reader_.header(); }

 private:
  bool opened();
  NameId name(StringId id);
  void project(const RecordSlot& slot, RecordBatch& batch);
  void fillGpuGaps(RecordBatch& batch);
  void addKernel(const KernelActivityRecord& k);
  void noteGpuTimes(const MemberView& v);
  // Tallies an op under its file's path id; returns the path's name (0: none).
  NameId notePath(uint32_t path, uint64_t bytes, const MemberView& v, bool call_piece);
  void mapClocks(ProcessInfo& info);
  void noteCutShort(ProcessInfo& info);
  uint64_t utcOf(uint64_t cpu_ns) const;

  SharedNames& names_;
  const int process_;
  const TimeWindow& window_;
  const bool keep_compute_;
  const bool gpu_gaps_;
  TraceReader reader_;
  tools::TraceTally tally_;
  std::vector<NameId> name_of_;  // reader string id -> run NameId (kUnset until first seen)
  NameId send_ = 0;
  uint64_t consumed_ = 0;
  uint64_t colls_before_ = 0, p2ps_before_ = 0;  // tallied before this chunk: its rows are the rest
  uint64_t first_gpu_ns_ = 0, last_gpu_ns_ = 0;
  uint64_t first_cpu_ns_ = 0;  // the earliest CPU start of an op read so far
  uint64_t last_cpu_ns_ = 0;  // the latest CPU time of an op read so far
  uint64_t heartbeat_utc_ns_ = 0;  // the file's latest clock sample
  std::vector<std::pair<uint64_t, uint64_t>> cpu_gpu_samples_, cupti_gpu_samples_;
  std::vector<std::pair<uint64_t, uint64_t>> cpu_cupti_samples_;  // the flusher's (monotonic, CUPTI) readings
  uint64_t compute_kernels_ = 0;
  std::vector<GpuInterval> compute_cupti_;  // compute kernels on the CUPTI clock, where kept
  std::unordered_map<NameId, KernelTally> kernel_tally_;
  // NCCL's kernels (CUPTI clock) matched to the plugin's ops (GPU clock) as they are read.
  std::unique_ptr<KernelClockMatcher> clock_match_;  // null when not matching: 1.2 KB a reader (the collector holds 16,384)
  GpuGapTracker gaps_;
  bool has_kernel_records_ = false;
  PhaseKeeper phases_;
  CudaSyncTally cuda_sync_;
  ProxyWireTally proxy_wire_;
  PhasePathTally paths_;
  StackTally stacks_;
};

}  // namespace commtrace::report
