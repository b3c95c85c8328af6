// Hand-written run directories for the report's loader tests: records built field by
// field and written per rank through the real encoder and frames (sink_test_support.h).
#pragma once

#include <string>
#include <vector>

#include "core/record.h"
#include "core/string_table.h"
#include "tests/support/sink_test_support.h"

namespace commtrace::testing {

inline StringId sid(const char* s) { return StringTable::global().intern(s); }

inline FileHeaderFields rankHeader(int rank, int world_size, const std::string& host = "host0",
                                   uint32_t restart_count = 0) {
  FileHeaderFields h = testHeader();
  h.identity.rank = rank;
  h.identity.local_rank = rank < 0 ? -1 : rank;
  h.identity.world_size = world_size;
  h.identity.restart_count = restart_count;
  h.host = host;
  h.pid = 1000 + rank + 100 * static_cast<int>(restart_count);
  return h;
}

inline RecordSlot commInfo(uint64_t comm_id, int n_ranks, int rank, int global_rank, const char* name = "",
                           int n_nodes = 1) {
  RecordSlot s{};
  s.kind = RecordKind::kCommInfo;
  s.payload.comm_info = {comm_id, 1, sid(name), n_nodes, n_ranks, rank, global_rank, 0};
  return s;
}

struct CollSpec {
  uint64_t comm_id = 0;
  const char* func = "AllReduce";
  uint64_t seq = 0;
  uint64_t op_index = 0;
  uint64_t bytes = 4096;
  uint64_t gpu_start_ns = 0;
  uint64_t gpu_end_ns = 0;
  bool graph_captured = false;
};

inline RecordSlot coll(const CollSpec& c) {
  RecordSlot s{};
  s.kind = RecordKind::kColl;
  s.payload.coll = CollRecord{.comm_id = c.comm_id,
                              .seq = c.seq,
                              .op_index = c.op_index,
                              .count = c.bytes / 4,
                              .bytes = c.bytes,
                              .cpu_start_ns = 100 + c.op_index,
                              .cpu_end_ns = 200 + c.op_index,
                              .gpu_start_ns = c.gpu_start_ns,
                              .gpu_end_ns = c.gpu_end_ns,
                              .func = sid(c.func),
                              .datatype = sid("ncclFloat32"),
                              .algo = sid("RING"),
                              .proto = sid("SIMPLE"),
                              .root = -1,
                              .n_channels = 2,
                              .graph_captured = static_cast<uint8_t>(c.graph_captured)};
  return s;
}

inline RecordSlot p2p(uint64_t comm_id, bool send, int peer, uint64_t op_index, uint64_t bytes,
                      const char* parent_func = "") {
  RecordSlot s{};
  s.kind = RecordKind::kP2p;
  s.payload.p2p = P2pRecord{.comm_id = comm_id,
                            .op_index = op_index,
                            .count = bytes,
                            .bytes = bytes,
                            .func = sid(send ? "Send" : "Recv"),
                            .datatype = sid("ncclInt8"),
                            .parent_func = sid(parent_func),
                            .peer = peer};
  return s;
}

// One process's file, chunk by chunk, in dir; returns its path.
inline std::string writeRankFile(const std::string& dir, const std::string& name, const FileHeaderFields& header,
                                 const std::vector<std::vector<RecordSlot>>& chunks) {
  const std::string path = dir + "/" + name + ".ctrace";
  writeFile(path, buildTrace(chunks, header).bytes);
  return path;
}

}  // namespace commtrace::testing
