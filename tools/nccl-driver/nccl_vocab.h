// NCCL's vocabulary as the profiler descriptors spell it: functions, datatypes, algorithms
// and protocols (shared/reference/nccl-profiler.md, sections 2.6 and 8). Every name is a
// string literal with static storage, as in NCCL, because descriptors carry const char*
// that a plugin may keep.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace commtrace::driver {

enum class Func : uint8_t { kAllReduce, kAllGather, kReduceScatter, kBroadcast, kReduce, kSend, kRecv, kAlltoAll, kGather, kScatter };

// ncclFuncToString spellings.
constexpr const char* funcName(Func f) {
  switch (f) {
    case Func::kAllReduce: return "AllReduce";
    case Func::kAllGather: return "AllGather";
    case Func::kReduceScatter: return "ReduceScatter";
    case Func::kBroadcast: return "Broadcast";
    case Func::kReduce: return "Reduce";
    case Func::kSend: return "Send";
    case Func::kRecv: return "Recv";
    case Func::kAlltoAll: return "AlltoAll";
    case Func::kGather: return "Gather";
    case Func::kScatter: return "Scatter";
  }
  return "Unknown";
}

// Collectives become one Coll task; the rest become per-peer Send/Recv (P2p) tasks.
constexpr bool isCollective(Func f) { return f <= Func::kReduce; }
// Collectives with a root rank.
constexpr bool isRooted(Func f) { return f == Func::kBroadcast || f == Func::kReduce || f == Func::kGather || f == Func::kScatter; }

struct Datatype {
  const char* scenario_name;  // the ncclDataType_t enumerator name, as scenarios write it
  const char* descr_name;     // what ncclDatatypeToString puts in descriptors
  uint8_t size;
};

// ncclUint8 is reported as "Unknown": ncclDatatypeToString has no case for it (NCCL 2.26-2.31).
inline constexpr Datatype kDatatypes[] = {
    {"ncclInt8", "ncclInt8", 1},          {"ncclUint8", "Unknown", 1},
    {"ncclInt32", "ncclInt32", 4},        {"ncclUint32", "ncclUint32", 4},
    {"ncclInt64", "ncclInt64", 8},        {"ncclUint64", "ncclUint64", 8},
    {"ncclFloat16", "ncclFloat16", 2},    {"ncclFloat32", "ncclFloat32", 4},
    {"ncclFloat64", "ncclFloat64", 8},    {"ncclBfloat16", "ncclBfloat16", 2},
    {"ncclFloat8e4m3", "ncclFloat8e4m3", 1}, {"ncclFloat8e5m2", "ncclFloat8e5m2", 1},
};
inline constexpr const Datatype& kInt8 = kDatatypes[0];

inline const Datatype* findDatatype(std::string_view name) {
  for (const Datatype& d : kDatatypes)
    if (name == d.scenario_name) return &d;
  return nullptr;
}

// ncclAlgoToString / ncclProtoToString spellings (not the NCCL_ALGO parsing ones).
inline constexpr const char* kAlgoNames[] = {"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT"};
inline constexpr const char* kProtoNames[] = {"LL", "LL128", "SIMPLE"};

template <size_t N>
const char* findName(const char* const (&names)[N], std::string_view name) {
  for (const char* n : names)
    if (name == n) return n;
  return nullptr;
}

}  // namespace commtrace::driver
