// The results of `commtrace report`: what the analyses compute from a RunModel and what the
// text, JSON, CSV and HTML writers print. Plain data, no behaviour; times in microseconds,
// bandwidths in GB/s (1e9 bytes/s, as nccl-tests prints them).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "tools/report/load/clock_summary.h"
#include "tools/report/load/run_summary_rows.h"

namespace commtrace::report {

// One line of the bandwidth table: one (communicator, func, size bucket, algo, proto).
struct BandwidthRow {
  uint64_t comm = 0;
  std::string comm_name;
  std::string func;
  uint64_t bytes = 0;  // nccl-tests S: message size (AllGather/ReduceScatter/AlltoAll: per-rank count x n)
  std::string bucket;  // "4-8 MiB"
  std::string algo;
  std::string proto;
  uint64_t count = 0;  // instances
  uint64_t timed = 0;  // instances with GPU times: the percentiles are over these
  double time_us_p50 = 0;  // transfer time: the shortest member's GPU duration (the last arriver's)
  double time_us_p90 = 0;
  double algbw_gbs_p50 = 0;
  double busbw_gbs_p50 = 0;
  // 0 when the percentiles are exact; else the relative error they are within (QuantileSketch:
  // a row of more than 4,096 distinct times or bandwidths is summarised, not held).
  double percentile_error = 0;
  // Why algbw/busbw (and, when timed == 0, the times) are absent; "" when they are present.
  // E.g. the size was not recorded (NCCL 2.28 names ncclUint8 "Unknown"): counted, no bandwidth.
  std::string no_bandwidth;
  // As `nsys stats` sums kernels: the transfer times' total, least and most, and the total's
  // share of every row's (what share of the job's communication time this group took).
  double time_us_total = 0;
  double time_us_min = 0;
  double time_us_max = 0;
  double time_fraction = 0;
  uint8_t channels = 0;  // the most channels any of its ops ran on (NCCL's nChannels; 0: not recorded)
};

// One shape of communicator and the parallelism its ops show (analyses/parallelism.h).
struct ParallelismRow {
  std::string kinds;     // the patterns as short words: "tp", "ddp", "fsdp", "zero", "pp", "ep", "other"; joined by ","
  int groups = 0;        // communicators of this shape
  int size = 0;          // ranks in each
  bool within_host = false;  // each inside one host
  // What each ran, most used first: per func its count (per step when `per_step`) and the
  // size bucket most of them fell in.
  struct FuncUse {
    std::string func;
    double count = 0;
    std::string bucket;
  };
  std::vector<FuncUse> uses;
  bool per_step = false;
  std::vector<std::string> comm_labels;  // its communicators'
  // In words (parallelismWords(): the words layer fills them).
  std::string pattern;   // "tensor parallel", "data parallel (DDP)", ...; several joined by " + "
  std::string comms;     // the first few labels
  std::string evidence;  // what each ran per step (or in all): funcs, counts, sizes
};

// What to try, and the measured numbers behind it (advice_words.h).
struct AdviceRow {
  std::string kind;      // "nccl_algo", "bucket_size", "overlap", "drain_host", "check_link", "straggler_compute", "straggler_host"
  std::string subject;   // what it is about: a communicator, a host, a link, a rank
  std::string advice;    // what to try
  std::string evidence;  // why: the numbers
};

// Bytes and time between two ranks.
struct MatrixCell {
  int src = 0;  // global ranks
  int dst = 0;
  uint64_t bytes = 0;
  uint64_t p2p_bytes = 0;  // the measured part of bytes (recorded point-to-point)
  double time_us = 0;    // summed transfer time of the ops that moved them
  double gbs = 0;        // bytes of the ops with GPU times / time_us; absent (0) when time_us is 0
  bool measured = false;  // true: every byte a recorded point-to-point; false: some modelled from a collective's algorithm
};

// The matrix for one slice (whole run, one communicator, or one func).
struct MatrixSlice {
  std::string label;  // "all", "comm tp.0 (0x...)", "AllReduce"
  uint64_t comm = 0;  // 0 when not per communicator
  std::string func;   // "" when not per func
  std::vector<MatrixCell> cells;  // non-zero cells only
};

struct CommMatrix {
  // The dense grids below are made for runs of at most this many ranks: ranks x ranks cells
  // are 24 MB at 1,024 ranks, 6 GB at 16,384 (and 100 GB for one record claiming global rank
  // 65535). Larger runs have the slices' sparse cells only (the "all" slice is the grid's).
  static constexpr int kMaxDenseRanks = 1024;
  int ranks = 0;
  bool dense = false;  // the grids below are filled
  std::vector<std::vector<uint64_t>> bytes;      // [src][dst], everything
  std::vector<std::vector<uint64_t>> p2p_bytes;  // [src][dst], recorded sends only
  std::vector<std::vector<double>> time_us;      // [src][dst]
  std::vector<MatrixSlice> slices;
  std::string model;  // how collectives were decomposed, in words
};

// One step, or on long runs a stretch of consecutive steps (see OverlapRow::steps), with
// the sums over them.
struct StepOverlap {
  int step = 0;
  int last_step = 0;    // == step for a single step
  double start_us = 0;  // of `step`, on the rank's GPU clock, relative to its first op
  double comm_us = 0;
  double overlapped_us = 0;
  double exposed_us = 0;
  double idle_us = 0;
  double compute_only_us = 0;  // compute kernels with no communication under them
};

// One step of one rank as intervals, in us from the rank's first communication kernel (as
// StepOverlap::start_us): what the HTML report draws as a timeline strip.
struct StepTimeline {
  int step = -1;  // -1: none
  double start_us = 0, end_us = 0;
  std::vector<std::pair<double, double>> comm, compute;  // unions, clipped to the step
};

struct OverlapRow {
  int rank = -1;
  bool available = false;
  std::string reason;  // why not, when !available ("no compute-kernel records: CUPTI was not attached")
  double comm_us = 0;        // union of communication kernel time
  double overlapped_us = 0;  // part of it under compute kernels
  double exposed_us = 0;     // comm_us - overlapped_us
  double idle_us = 0;        // GPU busy with neither, between the first and last op
  double compute_only_us = 0;  // compute with no communication under it, in the same span
  double overlap_pct = 0;
  std::string step_source;   // "nvtx", "inferred" (repeating op pattern) or "none"
  int step_count = 0;
  double mean_step_us = 0;   // from the first step's start to the last's, over step_count - 1
  // One entry per step, or, past kMaxStepPoints steps, per stretch of consecutive steps of
  // equal length: the output of a run of any length stays a few hundred rows per rank.
  std::vector<StepOverlap> steps;
  static constexpr size_t kMaxStepPoints = 500;
  // How CUPTI's kernels were put on the GPU clock, when through NCCL's kernels: how many
  // CUPTI reported, how many matched an op the plugin timed, the fit's residual.
  uint64_t clock_kernels = 0;
  uint64_t clock_matched = 0;
  double clock_residual_us = 0;
  StepTimeline most_exposed_step;  // its step with the most exposed communication (when available)
  // Ops recorded more than OverlapSweep::kReorderOps places from their program order (placed
  // where they came) and GPU intervals that far out of start order (their part before the
  // union's last interval is lost): the figures are approximate where this is not 0.
  uint64_t out_of_order = 0;
};

// Point-to-point waits between ranks (pipeline stages): a send or receive whose kernel ran
// longer than its peer's waited for the peer to arrive, by the difference (the two kernels
// end together), so no clock alignment is involved. One row per (rank, the peer it waited on).
struct PeerWaitRow {
  int rank = -1;      // who waited
  int peer = -1;      // on whom
  uint64_t transfers = 0;
  uint64_t waited = 0;   // transfers in which it waited at all
  double wait_us = 0;
  int steps = 0;                // the waiting rank's steps (the overlap table's)
  double wait_per_step_us = 0;  // wait_us / steps, when it has steps
  double step_share_pct = 0;    // wait per step over its mean step length, when known
};

// GPU activity by name, as HTA's kernel breakdown has it. Types are HTA's: communication
// (NCCL's kernels), memory (memcpys and memsets), computation (every other kernel).
struct KernelRow {
  int rank = -1;  // -1: all ranks together
  std::string name;
  std::string type;  // "computation", "communication", "memory"
  int ranks = 0;     // ranks that ran it
  uint64_t count = 0;
  double total_us = 0;
  double avg_us = 0;
  double max_us = 0;
  double share_pct = 0;  // of the GPU activity time of its rank (all ranks' for rank -1)
};

struct KernelTypeRow {
  int rank = -1;
  double computation_us = 0;
  double communication_us = 0;
  double memory_us = 0;
};

struct KernelBreakdown {
  std::vector<KernelRow> top;          // all ranks together, most total time first
  std::vector<KernelRow> per_rank;     // each rank's top kernels by total time, in rank order
  std::vector<KernelRow> per_rank_by_count;  // each rank's most frequent kernels, in rank order
  std::vector<KernelTypeRow> types;    // per rank with CUPTI records, in rank order
};

// Which reading of a flagged rank's figures decided its class (the writers put it into words:
// evidence_words.h).
enum class StragglerBasis : uint8_t {
  kNone,             // not flagged: no class to decide
  kNoGap,            // no earlier op on its GPU to measure the gap before its late arrivals from
  kSlowLink,         // the gap does not explain the lateness; it ends a slow link
  kEarlierOp,        // the gap does not explain the lateness: an earlier op held it up
  kComputeKernels,   // the longer gap, mostly its compute kernels (compute_share)
  kHostIdleGpu,      // the longer gap, mostly the GPU idle waiting for the host (compute_share)
  kEnqueuedLate,     // the longer gap, the CPU enqueued the op late into it (enqueue_fraction)
  kEnqueuedEarly,    // the longer gap, enqueued early: the GPU was busy (enqueue_fraction)
  kInferred,         // the longer gap, with neither kernel records nor clock samples
};

// How much one rank kept the others waiting.
struct StragglerRow {
  int rank = -1;
  std::string host;
  uint64_t instances = 0;      // collective instances it took part in
  double wait_caused_us = 0;   // sum over instances where it was last: the others' waits
  double late_fraction = 0;    // instances where it was last / instances
  double mean_lateness_us = 0; // mean over instances of (its arrival - first arrival)
  std::string cls;             // "compute", "host", "input", "network", "none" (not a straggler), "unknown"
  double confidence = 0;       // 0..1
  bool flagged = false;        // judged a straggler (not just someone who was last by chance)
  StragglerBasis basis = StragglerBasis::kNone;
  // The evidence's figures, for a program to read: how often chance would have it last, its
  // z-score, the median rank's waiting caused; for a flagged rank, over the ops it arrived
  // last at (gap_ops of them; NaN where not measured): medians of the GPU gap before them, of
  // its peers' gaps, of its excess over them and of its lateness, and the share of the excess
  // its compute kernels account for and how far into the gap the CPU enqueued the op.
  double chance_fraction = 0;
  double z = 0;
  double stretch_z = 0;  // the highest z over stretches of one of its communicators' instances (arrival_windows.h)
  double median_wait_caused_us = 0;
  uint64_t gap_ops = 0;
  uint64_t gap_sampled = 0;  // late arrivals sampled for compute_share and enqueue_fraction
  static constexpr double kNotMeasured = std::numeric_limits<double>::quiet_NaN();
  double gap_us_p50 = kNotMeasured, peer_gap_us_p50 = kNotMeasured, gap_excess_us_p50 = kNotMeasured;
  double late_lateness_us_p50 = kNotMeasured, compute_share = kNotMeasured, enqueue_fraction = kNotMeasured;
  double delay_fraction = kNotMeasured;  // its synchronizations at which it created a delay of 10 us or more
  // What fixing it would save, as a share of the run's time: the run replayed with its created
  // delays set to its peers' typical gap (wait_attribution.h); NaN where it was not replayed.
  double step_saved_share = kNotMeasured;
};

struct HostStragglerRow {
  std::string host;
  std::vector<int> ranks;
  double wait_caused_us = 0;
  double late_fraction = 0;
  // The host as one straggler (stragglers.h, hostIsCulprit): its ranks' last arrivals against
  // chance, its wait against the median host's, and whether the lateness is the host's (spread
  // over most of its ranks) rather than one rank's.
  double z = 0;
  double confidence = 0;
  bool flagged = false;
  double step_saved_share = StragglerRow::kNotMeasured;  // as StragglerRow's, for its ranks together
};

struct CommStragglerRow {
  uint64_t comm = 0;
  std::string comm_name;
  int worst_rank = -1;
  double wait_caused_us = 0;  // by its worst rank
  double total_wait_us = 0;   // all waiting in this communicator
  uint64_t instances = 0;
};

struct SlowLinkRow {
  int a = -1;  // global ranks
  int b = -1;
  std::string hosts;  // "hostA <-> hostB"
  bool inter_host = false;
  double achieved_gbs = 0;      // best bandwidth any op crossing it reached
  double peer_median_gbs = 0;   // median of the same for links of its kind
  uint64_t ops = 0;             // ops crossing it
  uint64_t direct_ops = 0;      // of them, ops that crossed this pair only (sends and receives, collectives of two)
  uint64_t kind_links = 0;      // links of its kind measured (a median of fewer than 3 says nothing)
  double confidence = 0;
  bool flagged = false;
  // Timed by NCCL's proxy (ProxyStep records; 0 and empty where not): its slower direction's
  // bytes over their time on the wire, the median of the same over links of its kind, how many
  // such links and steps, and the share of the sender's step time spent waiting for the peer.
  double wire_gbs = 0;
  double wire_median_gbs = 0;
  uint64_t wire_links = 0;
  uint64_t wire_steps = 0;
  double wire_peer_wait_share = 0;
};

// Lateness over time: rows are ranks, columns time bins of the aligned timeline.
struct LatenessHeatmap {
  std::vector<int> ranks;
  // "aligned time": bins of bin_us from start_us on the aligned timeline (reference GPU clock, us);
  // "op order": the clocks could not be aligned, bins of bin_ops per-communicator op indices.
  std::string axis;
  double bin_us = 0;
  double start_us = 0;
  double bin_ops = 0;
  std::vector<std::vector<double>> mean_lateness_us;  // [rank row][bin]; -1 where the rank had no instance in the bin
};

// busBw over time per (communicator, func), in columns of the aligned timeline (reference
// GPU clock, us), like the lateness heatmap's.
struct BandwidthSeriesRow {
  uint64_t comm = 0;
  std::string comm_name;
  std::string func;
  std::vector<uint64_t> ops;       // [column] collective instances that ended in it
  std::vector<double> busbw_gbs;   // [column] summed bus bytes / summed transfer time; -1 without an op
};
struct BandwidthSeries {
  std::string axis = "not aligned";  // "aligned time", or no series: no clock could be aligned
  double start_us = 0, bin_us = 0;
  std::vector<BandwidthSeriesRow> rows;
};

// One finding with the fields a CI job or a dashboard acts on (SCHEMA.md, finding_details[]).
struct FindingRow {
  static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
  std::string finding;     // the sentence Report::findings has
  std::string kind;        // "straggler", "slow_host", "slow_link", "missing_ranks", ...
  std::string severity;    // "window", "loss", "culprit", "cost", "note": the order they come in
  std::string level;       // "run", "rank", "host", "link", "communicator"
  std::string subject;     // "rank 3", "host node1", "rank 7 <-> rank 8", a communicator; "" for the run
  std::vector<int> ranks;  // the global ranks concerned
  double from_us = kNone;  // when: on the aligned timeline, from the run's first column
  double to_us = kNone;
  double cost_us = kNone;  // what it cost: the waiting it caused, the exposed or blocked time
  double cost_per_step_us = kNone;  // the same per step (the job's steps as overlap counts them)
  double cost_share = kNone;        // the same over the time it was taken from (0..1)
  // For a culprit: what fixing it would save per step, estimated by replaying the run without
  // its delays, and as a share of the step.
  double step_saved_us = kNone;
  double step_saved_share = kNone;
  double confidence = kNone;
};

struct StragglerReport {
  std::vector<StragglerRow> ranks;  // sorted by wait_caused_us, descending
  std::vector<HostStragglerRow> hosts;
  std::vector<CommStragglerRow> comms;
  std::vector<SlowLinkRow> links;  // sorted, slowest relative to its kind first
  LatenessHeatmap heatmap;
};

// CPU time spent inside CUDA synchronisation calls (the preload face's cuda* wrappers).
struct CudaSyncStats {
  uint64_t count = 0;   // calls
  uint64_t failed = 0;  // calls that returned an error
  double total_us = 0;
  double p50_us = 0;
  double max_us = 0;
};

struct CudaSyncStreamRow {
  uint64_t stream = 0;  // the cudaStream_t handle: 0 the legacy default stream, 2 the per-thread default stream
  CudaSyncStats stats;
};

struct CudaSyncCallRow {
  // "cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize" or
  // "cudaStreamWaitEvent"; a _ptsz entry point counts as its plain twin (the stream tells them apart).
  std::string call;
  CudaSyncStats stats;
  std::vector<CudaSyncStreamRow> streams;  // calls that take a stream only; most time first
};

// One process that made CUDA sync calls.
struct CudaSyncRow {
  int rank = -1;
  std::string host;
  double blocked_us = 0;  // over all its calls
  std::vector<CudaSyncCallRow> calls;  // most time first
};

struct MismatchRow {
  uint64_t comm = 0;
  std::string comm_name;
  std::string func;
  uint64_t seq = 0;  // NCCL's seq; p2p: the transfer's index among the sends from its sender to its receiver
  std::vector<int> missing_ranks;  // global ranks, or comm ranks when comm_ranks (printed "c<N>")
  bool comm_ranks = false;         // some global rank was unknown: missing_ranks holds comm ranks
  std::string kind;  // "missing" (others issued it), "unfinished" (started, never completed), "file ends" (the rank's trace stops earlier)
  std::string detail;  // one sentence: what is missing where (p2p: which send/receive, by transfer index): mismatchDetail()
  // What the sentence says, as the analysis found it.
  enum class Why : uint8_t { kRecordedLater, kUnfinished, kNoFile, kTraceStops };
  Why why = Why::kRecordedLater;
  uint64_t op_index = 0;                // a collective's (the members' op counter); a transfer's index
  bool transfer = false, send = false;  // a transfer's side: its send, or its receive
  int32_t src = -1, dst = -1;           // a transfer's comm ranks
  uint64_t dropped_records = 0;         // those its ranks' processes dropped before their files, where that explains it
  uint64_t left_open_utc_ns = 0;        // its file was left open, last written then (a file that ends); 0: not
};

struct Report {
  RunSummary run;
  ClockSummary clocks;
  std::vector<CommunicatorRow> communicators;
  std::vector<BandwidthRow> bandwidth;
  BandwidthSeries bandwidth_series;
  CommMatrix matrix;
  std::vector<OverlapRow> overlap;
  KernelBreakdown kernels;
  std::vector<PeerWaitRow> peer_waits;  // most wait first
  std::vector<CudaSyncRow> cuda_sync;  // processes with CUDA sync calls, in process order
  StragglerReport stragglers;
  std::vector<MismatchRow> mismatches;
  uint64_t mismatches_total = 0;  // mismatches may be capped in the list; this is the full count
  uint64_t collectives_lost_to_drops = 0;  // collective instances missing a member whose process dropped records
  // One sentence each: what makes the rest incomplete (no op in the window, ranks dead or
  // hung, lost data, mismatches), then every culprit, then the costs, then what could not be
  // decided (build_report.cc); finding_details holds the same, each with its fields.
  std::vector<std::string> findings;
  std::vector<FindingRow> finding_details;
  std::vector<ParallelismRow> parallelism;
  std::vector<AdviceRow> advice;
};

}  // namespace commtrace::report
