#include "tools/report/load/own_ops.h"

#include "core/nccl_vocab.h"
#include "sink/reader.h"

namespace commtrace::report {

bool isComputeKernel(const KernelActivityRecord& k, std::string_view name) {
  return k.activity == 1 && k.end_ns > k.start_ns && !nccl::isNcclKernelName(name);
}

bool readOwnRecords(const std::string& path, const OwnRecordSinks& sinks, std::string& error) {
  TraceReader reader;
  if (!reader.open(path, error)) return false;
  // The calling thread's, kept from file to file with its buffers' capacity: a fresh one per
  // file grew its records, frame and columns from nothing again, 16,384 times in a wide run.
  thread_local DecodedChunk chunk;
  while (reader.next(chunk)) {
    for (const RecordSlot& slot : chunk.records) {
      if (slot.kind == RecordKind::kColl) {
        const CollRecord& c = slot.payload.coll;
        if (sinks.op) sinks.op({c.comm_id, c.func, OpSide::kCollective, c.bytes, c.op_index, c.cpu_start_ns, c.gpu_start_ns, c.gpu_end_ns, c.phase_path});
      } else if (slot.kind == RecordKind::kP2p) {
        const P2pRecord& p = slot.payload.p2p;
        const OpSide side = reader.str(p.func) == "Recv" ? OpSide::kRecv : OpSide::kSend;
        if (sinks.op) sinks.op({p.comm_id, p.parent_func, side, p.bytes, p.op_index, p.cpu_start_ns, p.gpu_start_ns, p.gpu_end_ns, p.phase_path});
      } else if (slot.kind == RecordKind::kPhaseRange && sinks.phase) {
        const PhaseRangeRecord& r = slot.payload.phase_range;
        sinks.phase({0, r.cpu_start_ns, r.cpu_end_ns, r.depth}, reader.str(r.name), reader.str(r.domain));
      } else if (slot.kind == RecordKind::kKernelActivity && sinks.compute) {
        const KernelActivityRecord& k = slot.payload.kernel_activity;
        if (isComputeKernel(k, reader.str(k.name))) sinks.compute({k.start_ns, k.end_ns, 0, k.stream_id});
      }
    }
  }
  return true;
}

}  // namespace commtrace::report
