// The fixed-size records every face produces. One POD per kind; a RecordSlot (128 bytes,
// two cache lines) holds any of them, so a per-thread ring is a plain array of slots.
// Field widths follow what NCCL's profiler ABI v4-v7, CUPTI and NVTX deliver
// (see docs/nccl-profiler.md); names are interned StringIds, never pointers,
// because NCCL's strings and the user's comm names may be gone by the time we flush.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace commtrace {

// Index into the process-wide StringTable. 0 is the empty string ("unknown").
using StringId = uint32_t;

enum class RecordKind : uint8_t {
  kColl = 1,
  kP2p,
  kKernelCh,
  kProxyStep,
  kApiSpan,
  kKernelActivity,
  kPhaseRange,
  kClockSample,
  kCommInfo,
  kDropSummary,
  kInFlight,
  kPhasePath,
  kStackFrames,
  kStackSample,
  kModule,
};
inline constexpr int kRecordKindCount = 16;  // kinds are 1..15; slot 0 unused

// All *_ns fields are nanoseconds; 0 means "not known". CPU times are CLOCK_MONOTONIC,
// GPU times are raw GPU globaltimer values (NCCL pTimer), CUPTI times are CUPTI's clock.

// One NCCL collective as seen on one rank (the Coll event joined with its CollApi parent
// and its KernelCh children).
struct CollRecord {
  uint64_t comm_id;       // NCCL commHash / commId
  uint64_t seq;           // NCCL seqNumber: per communicator and per func
  uint64_t op_index;      // our own per-communicator counter, also for graph-captured ops
  uint64_t count;         // the user's element count (from CollApi)
  uint64_t bytes;         // payload bytes per rank
  uint64_t stream;        // cudaStream_t as an integer
  uint64_t user_tag;      // v7 userProfilerTag, 0 when untagged
  uint64_t cpu_start_ns;  // API enter
  uint64_t cpu_end_ns;    // API exit (enqueued, not completed)
  uint64_t gpu_start_ns;  // first KernelCh start
  uint64_t gpu_end_ns;    // last KernelCh stop
  StringId func;          // "AllReduce", ...
  StringId datatype;      // "ncclFloat32", ...
  StringId algo;          // "RING", "TREE", ...
  StringId proto;         // "LL", "LL128", "SIMPLE"
  uint32_t phase_path;    // the NVTX path open on the issuing thread (PhasePathRecord::id), 0: none
  int32_t root;
  uint32_t gpu_channel_spread_ns;  // last channel start - first channel start
  uint8_t n_channels;
  uint8_t n_warps;
  uint8_t graph_captured;
};

// One send or receive; AlltoAll/Gather/Scatter decompose into these with parent_func set.
struct P2pRecord {
  uint64_t comm_id;
  uint64_t op_index;  // per (communicator, direction, peer): the k-th send A->B meets the k-th receive on B

  uint64_t count;
  uint64_t bytes;
  uint64_t stream;
  uint64_t user_tag;
  uint64_t cpu_start_ns;
  uint64_t cpu_end_ns;
  uint64_t gpu_start_ns;
  uint64_t gpu_end_ns;
  StringId func;  // "Send" / "Recv"
  StringId datatype;
  StringId parent_func;  // "AlltoAll", "Gather", "Scatter" or 0
  int32_t peer;
  uint32_t phase_path;  // as CollRecord::phase_path
  uint8_t n_channels;
  uint8_t graph_captured;
};

// One channel of one op on the GPU (NCCL KernelCh).
struct KernelChRecord {
  uint64_t comm_id;
  uint64_t op_index;
  uint64_t gpu_start_ns;  // pTimer at start
  uint64_t gpu_end_ns;    // pTimer at KernelChStop
  uint64_t cpu_seen_ns;   // when the proxy/profiler thread observed the stop
  StringId func;
  uint8_t channel;
};

// One network transfer step (NCCL ProxyStep under a ProxyOp). state_ns are the times of
// the step's state transitions in NCCL's order (send: GPUWait, PeerWait, Wait; recv:
// Wait, FlushWait, GPUWait).
struct ProxyStepRecord {
  uint64_t comm_id;
  uint64_t op_index;
  uint64_t trans_bytes;
  uint64_t cpu_start_ns;
  uint64_t cpu_end_ns;
  uint64_t state_ns[3];
  int32_t peer;
  int32_t step;
  uint8_t channel;
  uint8_t is_send;
};

// A CPU-side API call: an NCCL entry point, a group, a CUDA call that makes the CPU wait.
struct ApiSpanRecord {
  uint64_t comm_id;  // 0 when not about a communicator
  uint64_t stream;
  uint64_t arg;      // call-specific (e.g. the count)
  uint64_t cpu_start_ns;
  uint64_t cpu_end_ns;
  StringId name;
  int32_t result;
};

// A GPU activity from CUPTI: kernel, memcpy, memset.
struct KernelActivityRecord {
  uint64_t start_ns;  // CUPTI clock
  uint64_t end_ns;
  uint64_t bytes;     // memcpy/memset size, 0 for kernels
  StringId name;
  uint32_t correlation_id;
  uint32_t stream_id;
  uint32_t context_id;
  uint32_t device;
  uint32_t grid_size;   // blocks
  uint32_t block_size;  // threads per block
  uint8_t activity;     // 1 kernel, 2 memcpy, 3 memset
};

// An NVTX range (the user's phases, NCCL's own ranges).
struct PhaseRangeRecord {
  uint64_t cpu_start_ns;
  uint64_t cpu_end_ns;
  uint64_t payload;
  StringId name;
  StringId domain;
  uint32_t category;
  uint16_t depth;
};

// One node of the tree of NVTX paths the process's threads issued ops under: a range named
// `name` (in `domain`) open inside the path `parent` (0: at the top). Written by the thread
// that first pushed a range at that place, before any op can carry the id; a path's ids are
// process-wide, and one path may have several (threads that met it apart). A step's range
// at the top has its digits folded ("train_step 12" is "train_step #"), so that every step
// shares one subtree and the tree grows with the program's structure, not its steps.
struct PhasePathRecord {
  uint32_t id;      // never 0
  uint32_t parent;  // 0: a top-level range
  StringId name;
  StringId domain;
};

// Part of a native call stack ops were sampled from (StackSampleRecord): return addresses,
// innermost first (pc[0] of the record with first = 0 is the return address into the
// function that called the NCCL API). A stack of more than kFramesPerRecord frames takes
// several records, written together by the thread that met the stack first, before any
// sample names it; ids are process-wide.
inline constexpr int kFramesPerRecord = 12;
struct StackFramesRecord {
  uint32_t stack;   // never 0
  uint16_t first;   // the stack's frame pc[0] is
  uint16_t depth;   // frames in the whole stack
  uint64_t pc[kFramesPerRecord];  // past depth - first: 0
};

// One op of the preload face's NCCL wrappers whose caller's stack was sampled: one op in
// COMMTRACE_STACKS on average, and each thread's first op of a (communicator, op, size
// class). weight: the ops the sample stands for (its thread's ops since its previous sample,
// itself included), so that weighted sums over samples estimate those over every op.
struct StackSampleRecord {
  uint64_t comm_id;
  uint64_t bytes;
  uint64_t cpu_start_ns;  // API enter
  uint64_t cpu_end_ns;    // API exit
  StringId func;
  uint32_t stack;       // StackFramesRecord::stack; 0: the stack could not be read
  uint32_t phase_path;  // as CollRecord::phase_path
  uint32_t weight;
};

// A loaded ELF module sampled stacks have frames in, written by the flusher (never a
// caller) after the first sample and whenever samples were taken since it last looked, so
// that a reader can turn a return address into (module, address in its file) and symbolise
// it offline. The modules loaded at the first look, and each one loaded since.
struct ModuleRecord {
  uint64_t start;      // lowest address its segments are mapped at
  uint64_t end;        // one past the highest
  uint64_t load_bias;  // its addresses in memory less those in its file (0: not relocated)
  StringId path;       // as the dynamic linker opened it; the program's own path for the program
  StringId build_id;   // hex of its GNU build id; "" when it has none
};

// Simultaneous readings of the clocks a process uses, so the reader can map all of them
// onto one timeline.
struct ClockSampleRecord {
  uint64_t monotonic_ns;
  uint64_t realtime_ns;
  uint64_t gpu_ns;    // 0 when no GPU reading was taken
  uint64_t cupti_ns;  // 0 when CUPTI is not attached
  int32_t device;     // -1 when no GPU reading was taken
};

// Who this process is in one communicator.
struct CommInfoRecord {
  uint64_t comm_id;
  uint64_t cpu_ns;
  StringId comm_name;
  int32_t n_nodes;
  int32_t n_ranks;
  int32_t rank;         // rank within the communicator
  int32_t global_rank;  // -1 when not known
  int32_t cuda_device;  // -1 when not known
};

// Records that never reached the file: cumulative per (thread, kind).
struct DropSummaryRecord {
  uint64_t ring_full;    // try_push found the thread's ring full
  uint64_t sink_failed;  // drained but not written (file unwritable, disk full)
  uint64_t cpu_ns;
  uint32_t thread;       // the dropping thread's tid
  uint8_t dropped_kind;  // a RecordKind
  uint64_t untracked;    // events a face could not follow (its op pool was full), process-wide
};

// The oldest op in flight on one communicator, written by the flusher (never a caller) once
// a second while that op has been in flight for a second or more, so that a reader can tell
// a hang from a quiet spell: the record is written at an op's completion, which a hung op
// never reaches. in_flight = 0 clears the communicator's earlier report: nothing is stuck
// on it any more.
struct InFlightRecord {
  uint64_t comm_id;
  uint64_t op_index;      // as CollRecord::op_index / P2pRecord::op_index
  uint64_t seq;           // collectives: NCCL seqNumber; 0 for send/receive
  uint64_t cpu_start_ns;  // API enter of the oldest op
  uint64_t cpu_seen_ns;   // when the flusher found it still in flight
  StringId func;
  int32_t peer;           // send/receive: the peer's comm rank; -1 for collectives
  uint32_t in_flight;     // ops in flight on the communicator, this one included
};

// DropSummaryRecord::thread of activity records CUPTI itself dropped (it found no buffer,
// or overflowed its own): no thread of ours dropped them.
inline constexpr uint32_t kCuptiDropThread = UINT32_MAX;
// DropSummaryRecord::thread of records whose threads had no ring (the rings' memory limit
// was reached, a ring could not be allocated, or recording could not start).
inline constexpr uint32_t kRinglessThread = UINT32_MAX - 1;

template <class T> struct KindOf;
template <> struct KindOf<CollRecord> { static constexpr RecordKind value = RecordKind::kColl; };
template <> struct KindOf<P2pRecord> { static constexpr RecordKind value = RecordKind::kP2p; };
template <> struct KindOf<KernelChRecord> { static constexpr RecordKind value = RecordKind::kKernelCh; };
template <> struct KindOf<ProxyStepRecord> { static constexpr RecordKind value = RecordKind::kProxyStep; };
template <> struct KindOf<ApiSpanRecord> { static constexpr RecordKind value = RecordKind::kApiSpan; };
template <> struct KindOf<KernelActivityRecord> { static constexpr RecordKind value = RecordKind::kKernelActivity; };
template <> struct KindOf<PhaseRangeRecord> { static constexpr RecordKind value = RecordKind::kPhaseRange; };
template <> struct KindOf<ClockSampleRecord> { static constexpr RecordKind value = RecordKind::kClockSample; };
template <> struct KindOf<CommInfoRecord> { static constexpr RecordKind value = RecordKind::kCommInfo; };
template <> struct KindOf<DropSummaryRecord> { static constexpr RecordKind value = RecordKind::kDropSummary; };
template <> struct KindOf<InFlightRecord> { static constexpr RecordKind value = RecordKind::kInFlight; };
template <> struct KindOf<PhasePathRecord> { static constexpr RecordKind value = RecordKind::kPhasePath; };
template <> struct KindOf<StackFramesRecord> { static constexpr RecordKind value = RecordKind::kStackFrames; };
template <> struct KindOf<StackSampleRecord> { static constexpr RecordKind value = RecordKind::kStackSample; };
template <> struct KindOf<ModuleRecord> { static constexpr RecordKind value = RecordKind::kModule; };

// What a ring holds: any record, then an 8-byte trailer. The record comes first so that a
// push copies it to a cache-line-aligned address with no store straddling two lines. The
// thread is stamped by the ring, so producers never read their tid.
struct alignas(64) RecordSlot {
  union Payload {
    CollRecord coll;
    P2pRecord p2p;
    KernelChRecord kernel_ch;
    ProxyStepRecord proxy_step;
    ApiSpanRecord api_span;
    KernelActivityRecord kernel_activity;
    PhaseRangeRecord phase_range;
    ClockSampleRecord clock_sample;
    CommInfoRecord comm_info;
    DropSummaryRecord drop_summary;
    InFlightRecord in_flight;
    PhasePathRecord phase_path;
    StackFramesRecord stack_frames;
    StackSampleRecord stack_sample;
    ModuleRecord module;
  } payload;
  uint32_t thread;
  RecordKind kind;
  uint8_t reserved[3];
};

// Calls f with the payload member that holds a record of the slot's kind: the one place a
// kind meets its struct, so that code over every kind (tests' helpers) has no switch of its
// own. false for a kind no record has.
template <class Slot, class F>
bool visitRecord(Slot& slot, F&& f) {
  auto& p = slot.payload;
  switch (slot.kind) {
    case RecordKind::kColl: f(p.coll); return true;
    case RecordKind::kP2p: f(p.p2p); return true;
    case RecordKind::kKernelCh: f(p.kernel_ch); return true;
    case RecordKind::kProxyStep: f(p.proxy_step); return true;
    case RecordKind::kApiSpan: f(p.api_span); return true;
    case RecordKind::kKernelActivity: f(p.kernel_activity); return true;
    case RecordKind::kPhaseRange: f(p.phase_range); return true;
    case RecordKind::kClockSample: f(p.clock_sample); return true;
    case RecordKind::kCommInfo: f(p.comm_info); return true;
    case RecordKind::kDropSummary: f(p.drop_summary); return true;
    case RecordKind::kInFlight: f(p.in_flight); return true;
    case RecordKind::kPhasePath: f(p.phase_path); return true;
    case RecordKind::kStackFrames: f(p.stack_frames); return true;
    case RecordKind::kStackSample: f(p.stack_sample); return true;
    case RecordKind::kModule: f(p.module); return true;
  }
  return false;
}

static_assert(sizeof(RecordSlot) == 128, "a slot is two cache lines");
static_assert(std::is_trivially_copyable_v<RecordSlot>);
static_assert(sizeof(RecordSlot::Payload) == 120 && offsetof(RecordSlot, thread) == 120);

}  // namespace commtrace
