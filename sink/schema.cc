#include "sink/schema.h"

namespace commtrace::schema {
namespace {

constexpr uint16_t kPayload = offsetof(RecordSlot, payload);

// Column builders: the field's offset, width and signedness come from the struct itself,
// so the table cannot drift from record.h.
#define CT_FIELD(Struct, field)                                                    \
  static_cast<uint16_t>(kPayload + offsetof(Struct, field)),                              \
      static_cast<uint8_t>(sizeof(Struct::field)),                                         \
      std::is_signed_v<decltype(Struct::field)>
#define CT_THREAD offsetof(RecordSlot, thread), 4, false

#define PLAIN(S, f, num, shape) {#f, num, CT_FIELD(S, f), Codec::kPlain, shape}
#define SIGNED(S, f, num, shape) {#f, num, CT_FIELD(S, f), Codec::kSigned, shape}
#define STRING(S, f, num, shape) {#f, num, CT_FIELD(S, f), Codec::kString, shape}
#define DELTA(S, f, num, ref, row_delta, group, step) \
  {#f, num, CT_FIELD(S, f), Codec::kDelta, false, ref, row_delta, group, step}
#define THREAD(num, shape) {"thread", num, CT_THREAD, Codec::kPlain, shape}

// A group mask from column indices.
template <class... I>
constexpr uint32_t cols(I... index) {
  return ((1u << index) | ...);
}
constexpr uint32_t firstColumns(int n) { return (1u << n) - 1; }

// Column indices (ref_column, group) are positions within each array; shape columns come
// first in every table, so groups and refs always point at columns decoded earlier.
constexpr uint32_t kCollShape = firstColumns(14);
constexpr Column kColl[] = {
    THREAD(2, true),
    PLAIN(CollRecord, comm_id, 3, true),
    PLAIN(CollRecord, stream, 4, true),
    PLAIN(CollRecord, user_tag, 5, true),
    PLAIN(CollRecord, count, 6, true),
    PLAIN(CollRecord, bytes, 7, true),
    STRING(CollRecord, func, 8, true),
    STRING(CollRecord, datatype, 9, true),
    STRING(CollRecord, algo, 10, true),
    STRING(CollRecord, proto, 11, true),
    SIGNED(CollRecord, root, 13, true),
    PLAIN(CollRecord, n_channels, 14, true),
    PLAIN(CollRecord, n_warps, 15, true),
    PLAIN(CollRecord, graph_captured, 16, true),
    DELTA(CollRecord, seq, 20, -1, false, cols(1, 6), 1),
    DELTA(CollRecord, op_index, 21, -1, false, cols(1), 1),
    DELTA(CollRecord, cpu_start_ns, 22, -1, true, kCollShape, 0),  // [16]
    DELTA(CollRecord, cpu_end_ns, 23, 16, false, kCollShape, 0),
    DELTA(CollRecord, gpu_start_ns, 24, -1, true, kCollShape, 0),  // [18]
    DELTA(CollRecord, gpu_end_ns, 25, 18, false, kCollShape, 0),
    PLAIN(CollRecord, gpu_channel_spread_ns, 26, false),
    DELTA(CollRecord, phase_path, 27, -1, true, 0, 0),  // a thread's ops run in a path: mostly 0, sparse
};

constexpr uint32_t kP2pShape = firstColumns(12);
constexpr Column kP2p[] = {
    THREAD(2, true),
    PLAIN(P2pRecord, comm_id, 3, true),
    PLAIN(P2pRecord, stream, 4, true),
    PLAIN(P2pRecord, user_tag, 5, true),
    PLAIN(P2pRecord, count, 6, true),
    PLAIN(P2pRecord, bytes, 7, true),
    STRING(P2pRecord, func, 8, true),
    STRING(P2pRecord, datatype, 9, true),
    STRING(P2pRecord, parent_func, 10, true),
    SIGNED(P2pRecord, peer, 11, true),
    PLAIN(P2pRecord, n_channels, 12, true),
    PLAIN(P2pRecord, graph_captured, 13, true),
    DELTA(P2pRecord, op_index, 20, -1, false, cols(1, 6, 9), 1),
    DELTA(P2pRecord, cpu_start_ns, 21, -1, true, kP2pShape, 0),  // [13]
    DELTA(P2pRecord, cpu_end_ns, 22, 13, false, kP2pShape, 0),
    DELTA(P2pRecord, gpu_start_ns, 23, -1, true, kP2pShape, 0),  // [15]
    DELTA(P2pRecord, gpu_end_ns, 24, 15, false, kP2pShape, 0),
    DELTA(P2pRecord, phase_path, 25, -1, true, 0, 0),
};

constexpr Column kKernelCh[] = {
    THREAD(2, true),
    PLAIN(KernelChRecord, comm_id, 3, true),
    STRING(KernelChRecord, func, 4, true),
    PLAIN(KernelChRecord, channel, 5, true),
    DELTA(KernelChRecord, op_index, 20, -1, false, cols(1, 3), 1),
    DELTA(KernelChRecord, gpu_start_ns, 21, -1, true, 0, 0),  // [5]
    DELTA(KernelChRecord, gpu_end_ns, 22, 5, false, 0, 0),    // [6]
    DELTA(KernelChRecord, cpu_seen_ns, 23, 6, true, 0, 0),
};

#define STATE_NS(i, num)                                                                       \
  {"state" #i "_ns", num,                                                                      \
   static_cast<uint16_t>(kPayload + offsetof(ProxyStepRecord, state_ns) + 8 * (i)), 8, false, \
   Codec::kDelta, false, 8, false, 0, 0}

constexpr uint32_t kProxyStepShape = firstColumns(5);
constexpr Column kProxyStep[] = {
    THREAD(2, true),
    PLAIN(ProxyStepRecord, comm_id, 3, true),
    PLAIN(ProxyStepRecord, channel, 4, true),
    SIGNED(ProxyStepRecord, peer, 5, true),
    PLAIN(ProxyStepRecord, is_send, 6, true),
    DELTA(ProxyStepRecord, op_index, 20, -1, false, kProxyStepShape, 0),
    DELTA(ProxyStepRecord, step, 21, -1, false, kProxyStepShape, 1),
    PLAIN(ProxyStepRecord, trans_bytes, 22, false),
    DELTA(ProxyStepRecord, cpu_start_ns, 23, -1, true, 0, 0),  // [8]
    DELTA(ProxyStepRecord, cpu_end_ns, 24, 8, false, 0, 0),
    STATE_NS(0, 25),
    STATE_NS(1, 26),
    STATE_NS(2, 27),
};

constexpr Column kApiSpan[] = {
    THREAD(2, true),
    STRING(ApiSpanRecord, name, 3, true),
    PLAIN(ApiSpanRecord, comm_id, 4, true),
    PLAIN(ApiSpanRecord, stream, 5, true),
    SIGNED(ApiSpanRecord, result, 6, true),
    PLAIN(ApiSpanRecord, arg, 20, false),
    DELTA(ApiSpanRecord, cpu_start_ns, 21, -1, true, 0, 0),  // [6]
    DELTA(ApiSpanRecord, cpu_end_ns, 22, 6, false, 0, 0),
};

constexpr Column kKernelActivity[] = {
    THREAD(2, true),
    STRING(KernelActivityRecord, name, 3, true),
    PLAIN(KernelActivityRecord, stream_id, 4, true),
    PLAIN(KernelActivityRecord, context_id, 5, true),
    PLAIN(KernelActivityRecord, device, 6, true),
    PLAIN(KernelActivityRecord, grid_size, 7, true),
    PLAIN(KernelActivityRecord, block_size, 8, true),
    PLAIN(KernelActivityRecord, activity, 9, true),
    DELTA(KernelActivityRecord, correlation_id, 20, -1, true, 0, 0),
    DELTA(KernelActivityRecord, start_ns, 21, -1, true, 0, 0),  // [9]
    DELTA(KernelActivityRecord, end_ns, 22, 9, false, 0, 0),
    PLAIN(KernelActivityRecord, bytes, 23, false),
};

constexpr Column kPhaseRange[] = {
    THREAD(2, true),
    STRING(PhaseRangeRecord, name, 3, true),
    STRING(PhaseRangeRecord, domain, 4, true),
    PLAIN(PhaseRangeRecord, category, 5, true),
    PLAIN(PhaseRangeRecord, depth, 6, true),
    PLAIN(PhaseRangeRecord, payload, 20, false),
    DELTA(PhaseRangeRecord, cpu_start_ns, 21, -1, true, 0, 0),  // [6]
    DELTA(PhaseRangeRecord, cpu_end_ns, 22, 6, false, 0, 0),
};

constexpr Column kClockSample[] = {
    THREAD(1, false),
    DELTA(ClockSampleRecord, monotonic_ns, 2, -1, true, 0, 0),  // [1]
    DELTA(ClockSampleRecord, realtime_ns, 3, 1, true, 0, 0),
    DELTA(ClockSampleRecord, gpu_ns, 4, 1, true, 0, 0),
    DELTA(ClockSampleRecord, cupti_ns, 5, 1, true, 0, 0),
    SIGNED(ClockSampleRecord, device, 6, false),
};

constexpr Column kCommInfo[] = {
    THREAD(1, false),
    PLAIN(CommInfoRecord, comm_id, 2, false),
    DELTA(CommInfoRecord, cpu_ns, 3, -1, true, 0, 0),
    STRING(CommInfoRecord, comm_name, 4, false),
    SIGNED(CommInfoRecord, n_nodes, 5, false),
    SIGNED(CommInfoRecord, n_ranks, 6, false),
    SIGNED(CommInfoRecord, rank, 7, false),
    SIGNED(CommInfoRecord, global_rank, 8, false),
    SIGNED(CommInfoRecord, cuda_device, 9, false),
};

constexpr Column kDropSummary[] = {
    PLAIN(DropSummaryRecord, thread, 1, false),
    PLAIN(DropSummaryRecord, dropped_kind, 2, false),
    PLAIN(DropSummaryRecord, ring_full, 3, false),
    PLAIN(DropSummaryRecord, sink_failed, 4, false),
    DELTA(DropSummaryRecord, cpu_ns, 5, -1, true, 0, 0),
    PLAIN(DropSummaryRecord, untracked, 6, false),
};

constexpr Column kInFlight[] = {
    THREAD(1, false),
    PLAIN(InFlightRecord, comm_id, 2, false),
    STRING(InFlightRecord, func, 3, false),
    SIGNED(InFlightRecord, peer, 4, false),
    PLAIN(InFlightRecord, in_flight, 5, false),
    PLAIN(InFlightRecord, op_index, 6, false),
    PLAIN(InFlightRecord, seq, 7, false),
    DELTA(InFlightRecord, cpu_seen_ns, 8, -1, true, 0, 0),  // [7]
    DELTA(InFlightRecord, cpu_start_ns, 9, 7, false, 0, 0),
};

constexpr Column kPhasePath[] = {
    THREAD(1, false),
    DELTA(PhasePathRecord, id, 2, -1, true, 0, 0),  // ids are handed out in order: small deltas
    DELTA(PhasePathRecord, parent, 3, 1, false, 0, 0),  // a child's parent is a recent id
    STRING(PhasePathRecord, name, 4, false),
    STRING(PhasePathRecord, domain, 5, false),
};

// A frame's column: pc[i] of the record, named pc<i> (its proto field).
#define FRAME(i, num) {"pc" #i, num, CT_FIELD(StackFramesRecord, pc[i]), Codec::kPlain, false}
constexpr Column kStackFrames[] = {
    THREAD(1, false),
    DELTA(StackFramesRecord, stack, 2, -1, true, 0, 0),  // ids are handed out in order
    PLAIN(StackFramesRecord, first, 3, false),
    PLAIN(StackFramesRecord, depth, 4, false),
    FRAME(0, 5), FRAME(1, 6), FRAME(2, 7), FRAME(3, 8), FRAME(4, 9), FRAME(5, 10),
    FRAME(6, 11), FRAME(7, 12), FRAME(8, 13), FRAME(9, 14), FRAME(10, 15), FRAME(11, 16),
};
static_assert(kFramesPerRecord == 12, "a FRAME column per frame");

constexpr Column kStackSample[] = {
    THREAD(1, false),
    PLAIN(StackSampleRecord, comm_id, 2, false),
    STRING(StackSampleRecord, func, 3, false),
    PLAIN(StackSampleRecord, bytes, 4, false),
    PLAIN(StackSampleRecord, stack, 5, false),
    PLAIN(StackSampleRecord, phase_path, 6, false),
    PLAIN(StackSampleRecord, weight, 7, false),
    DELTA(StackSampleRecord, cpu_start_ns, 8, -1, true, 0, 0),  // [7]
    DELTA(StackSampleRecord, cpu_end_ns, 9, 7, false, 0, 0),
};

constexpr Column kModule[] = {
    THREAD(1, false),
    PLAIN(ModuleRecord, start, 2, false),
    PLAIN(ModuleRecord, end, 3, false),
    PLAIN(ModuleRecord, load_bias, 4, false),
    STRING(ModuleRecord, path, 5, false),
    STRING(ModuleRecord, build_id, 6, false),
};

constexpr Table kTables[] = {
    {RecordKind::kColl, "coll", "CollTable", 10, kColl, true},
    {RecordKind::kP2p, "p2p", "P2pTable", 11, kP2p, true},
    {RecordKind::kKernelCh, "kernel_ch", "KernelChTable", 12, kKernelCh, false},
    {RecordKind::kProxyStep, "proxy_step", "ProxyStepTable", 13, kProxyStep, false},
    {RecordKind::kApiSpan, "api_span", "ApiSpanTable", 14, kApiSpan, false},
    {RecordKind::kKernelActivity, "kernel_activity", "KernelActivityTable", 15, kKernelActivity, false},
    {RecordKind::kPhaseRange, "phase_range", "PhaseRangeTable", 16, kPhaseRange, false},
    {RecordKind::kClockSample, "clock_sample", "ClockSampleTable", 17, kClockSample, true},
    {RecordKind::kCommInfo, "comm_info", "CommInfoTable", 18, kCommInfo, true},
    {RecordKind::kDropSummary, "drop_summary", "DropSummaryTable", 19, kDropSummary, true},
    {RecordKind::kInFlight, "in_flight", "InFlightTable", 20, kInFlight, true},
    {RecordKind::kPhasePath, "phase_path", "PhasePathTable", 21, kPhasePath, false},
    {RecordKind::kStackFrames, "stack_frames", "StackFramesTable", 22, kStackFrames, false},
    {RecordKind::kStackSample, "stack_sample", "StackSampleTable", 23, kStackSample, false},
    {RecordKind::kModule, "module", "ModuleTable", 24, kModule, false},
};
static_assert(std::size(kTables) == kRecordKindCount - 1);
static_assert(std::size(kColl) <= kMaxColumns && std::size(kP2p) <= kMaxColumns && std::size(kKernelCh) <= kMaxColumns &&
              std::size(kProxyStep) <= kMaxColumns && std::size(kApiSpan) <= kMaxColumns && std::size(kKernelActivity) <= kMaxColumns &&
              std::size(kPhaseRange) <= kMaxColumns && std::size(kClockSample) <= kMaxColumns && std::size(kCommInfo) <= kMaxColumns &&
              std::size(kDropSummary) <= kMaxColumns && std::size(kInFlight) <= kMaxColumns && std::size(kPhasePath) <= kMaxColumns &&
              std::size(kStackFrames) <= kMaxColumns && std::size(kStackSample) <= kMaxColumns && std::size(kModule) <= kMaxColumns);

// The reader takes shape columns from a per-shape copy and decodes only row columns row by
// row, so a ref must name an earlier row column (proto_conformance_test checks the rest:
// groups name shape columns, shape columns are not predicted).
constexpr bool refsNameEarlierRowColumns(std::span<const Column> columns) {
  for (size_t i = 0; i < columns.size(); ++i) {
    const int ref = columns[i].ref_column;
    if (ref >= 0 && (static_cast<size_t>(ref) >= i || columns[static_cast<size_t>(ref)].in_shape)) return false;
  }
  return true;
}
static_assert(refsNameEarlierRowColumns(kColl) && refsNameEarlierRowColumns(kP2p) &&
              refsNameEarlierRowColumns(kKernelCh) && refsNameEarlierRowColumns(kProxyStep) &&
              refsNameEarlierRowColumns(kApiSpan) && refsNameEarlierRowColumns(kKernelActivity) &&
              refsNameEarlierRowColumns(kPhaseRange) && refsNameEarlierRowColumns(kClockSample) &&
              refsNameEarlierRowColumns(kCommInfo) && refsNameEarlierRowColumns(kDropSummary) &&
              refsNameEarlierRowColumns(kInFlight) && refsNameEarlierRowColumns(kPhasePath) &&
              refsNameEarlierRowColumns(kStackFrames) && refsNameEarlierRowColumns(kStackSample) &&
              refsNameEarlierRowColumns(kModule));

}  // namespace

bool Table::has_shape() const {
  for (const Column& c : columns) {
    if (c.in_shape) return true;
  }
  return false;
}

const Table* tableFor(RecordKind kind) {
  const int index = static_cast<int>(kind) - 1;
  if (index < 0 || index >= static_cast<int>(std::size(kTables))) return nullptr;
  return &kTables[index];
}

std::span<const Table> allTables() { return kTables; }

}  // namespace commtrace::schema
