// The calls nccl_wrappers_child makes on the communicators of one "rank", shared with
// nccl_wrappers_test, which derives from the same list what the trace file must hold.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "interpose/nccl_api.h"

namespace commtrace::testing {

enum class CommRole { kWorld, kSplit, kSolo };  // 2 ranks, 2 ranks (split of world), 1 rank

// Peers of Send/Recv are relative to the caller: +1 sends to the next rank, -1 receives
// from the previous one (on a single-rank communicator both are rank 0).
struct ScenarioStep {
  std::string_view api;  // "ncclAllReduce", ..., "ncclGroupStart", "ncclGroupEnd"
  CommRole comm;
  uint64_t count;
  int datatype;
  int root_or_peer;  // root, or the peer's offset from the caller
  uint64_t stream;
};

inline const std::vector<ScenarioStep>& scenarioSteps() {
  using namespace nccl_api;
  static const std::vector<ScenarioStep> steps = {
      {"ncclAllReduce", CommRole::kWorld, 100, kFloat32, 0, 0x1000},
      {"ncclAllReduce", CommRole::kWorld, 101, kFloat32, 0, 0x1001},
      {"ncclAllReduce", CommRole::kWorld, 102, kFloat16, 0, 0x1002},
      {"ncclAllReduce", CommRole::kWorld, 0, kFloat32, 0, 0x1004},  // NCCL discards it: no op
      {"ncclBroadcast", CommRole::kWorld, 200, kInt32, 1, 0x2000},
      {"ncclBroadcast", CommRole::kWorld, 201, kInt32, 0, 0x2001},
      {"ncclBcast", CommRole::kWorld, 202, kFloat64, 1, 0x2002},  // NCCL runs it through ncclBroadcast
      {"ncclReduce", CommRole::kWorld, 300, kBfloat16, 0, 0x3000},
      {"ncclReduce", CommRole::kWorld, 301, kBfloat16, 1, 0x3001},
      {"ncclAllGather", CommRole::kWorld, 400, kUint8, 0, 0x4000},
      {"ncclAllGather", CommRole::kWorld, 401, kFloat16, 0, 0x4001},
      {"ncclReduceScatter", CommRole::kWorld, 500, kInt64, 0, 0x5000},
      {"ncclReduceScatter", CommRole::kWorld, 501, kUint64, 0, 0x5001},
      {"ncclAlltoAll", CommRole::kWorld, 600, kFloat32, 0, 0x6000},
      {"ncclGather", CommRole::kWorld, 700, kInt8, 1, 0x7000},
      {"ncclScatter", CommRole::kWorld, 800, kUint32, 0, 0x8000},
      {"ncclGroupStart", CommRole::kWorld, 0, 0, 0, 0},
      {"ncclSend", CommRole::kWorld, 900, kFloat8e4m3, +1, 0x9000},
      {"ncclRecv", CommRole::kWorld, 901, kFloat8e5m2, -1, 0x9001},
      {"ncclGroupEnd", CommRole::kWorld, 0, 0, 0, 0},
      {"ncclSend", CommRole::kWorld, 902, kInt32, +1, 0x9002},  // NCCL groups it internally
      {"ncclGroupStart", CommRole::kWorld, 0, 0, 0, 0},
      {"ncclGroupStart", CommRole::kWorld, 0, 0, 0, 0},
      {"ncclRecv", CommRole::kWorld, 903, kInt32, -1, 0x9003},
      {"ncclAllReduce", CommRole::kWorld, 103, kFloat32, 0, 0x1003},
      {"ncclGroupEnd", CommRole::kWorld, 0, 0, 0, 0},
      {"ncclGroupEnd", CommRole::kWorld, 0, 0, 0, 0},
      {"ncclAllReduce", CommRole::kSplit, 1000, kFloat32, 0, 0xA000},
      {"ncclAllGather", CommRole::kSplit, 1001, kFloat32, 0, 0xA001},
      {"ncclAllReduce", CommRole::kSplit, 1002, kFloat32, 0, 0xA002},
      {"ncclAllReduce", CommRole::kSolo, 1100, kFloat32, 0, 0xB000},
      {"ncclAllReduce", CommRole::kSolo, 1101, kFloat64, 0, 0xB001},
      {"ncclBroadcast", CommRole::kSolo, 1102, kInt8, 0, 0xB002},
      {"ncclGroupStart", CommRole::kSolo, 0, 0, 0, 0},
      {"ncclSend", CommRole::kSolo, 1103, kInt32, +1, 0xB003},
      {"ncclRecv", CommRole::kSolo, 1104, kInt32, -1, 0xB004},
      {"ncclGroupEnd", CommRole::kSolo, 0, 0, 0, 0},
      {"ncclAlltoAll", CommRole::kSolo, 1105, kInt32, 0, 0xB005},
  };
  return steps;
}

// The unique id every rank of a communicator is given, from a seed text.
inline nccl_api::UniqueId uniqueIdOf(std::string_view seed) {
  nccl_api::UniqueId id{};
  for (size_t i = 0; i < sizeof id.internal && !seed.empty(); ++i) id.internal[i] = seed[i % seed.size()];
  return id;
}

inline constexpr int kSplitColor = 7;

}  // namespace commtrace::testing
