#include "tools/report/load/own_ops.h"

#include "sink/reader.h"

namespace commtrace::report {

bool readOwnOps(const std::string& path, const std::function<void(const OwnOp&)>& each, std::string& error) {
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
      }
    }
  }
  return true;
}

}  // namespace commtrace::report
