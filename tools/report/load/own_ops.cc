#include "tools/report/load/own_ops.h"

#include "sink/reader.h"

namespace commtrace::report {

bool readOwnRecords(const std::string& path, const std::function<void(const OwnOp&)>& each,
                    const std::function<void(const PhaseSpan&, std::string_view name)>& phase, std::string& error) {
  TraceReader reader;
  if (!reader.open(path, error)) return false;
  DecodedChunk chunk;
  while (reader.next(chunk)) {
    for (const RecordSlot& slot : chunk.records) {
      if (slot.kind == RecordKind::kColl) {
        const CollRecord& c = slot.payload.coll;
        each({c.comm_id, c.func, OpSide::kCollective, c.bytes, c.op_index, c.cpu_start_ns, c.gpu_start_ns, c.gpu_end_ns});
      } else if (slot.kind == RecordKind::kP2p) {
        const P2pRecord& p = slot.payload.p2p;
        const OpSide side = reader.str(p.func) == "Recv" ? OpSide::kRecv : OpSide::kSend;
        each({p.comm_id, p.parent_func, side, p.bytes, p.op_index, p.cpu_start_ns, p.gpu_start_ns, p.gpu_end_ns});
      } else if (slot.kind == RecordKind::kPhaseRange && phase) {
        const PhaseRangeRecord& r = slot.payload.phase_range;
        phase({0, r.cpu_start_ns, r.cpu_end_ns, r.depth}, reader.str(r.name));
      }
    }
  }
  return true;
}

}  // namespace commtrace::report
