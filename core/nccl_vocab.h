// NCCL's vocabulary, once for the whole project: functions, datatypes, algorithms,
// protocols and results, as NCCL spells and numbers them (facts from nccl.h 2.28, the
// profiler descriptors of 2.26-2.31 and nccl-tests). The plugin, the NCCL wrappers, the
// NCCL driver, the synthetic writer and the report all name NCCL's things through these
// tables. Dependency-free and constexpr: usable on any hot path and in any tool.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string_view>

namespace commtrace::nccl {

// ---- functions ----

enum class Func : uint8_t {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kReduce,
  kAlltoAll,
  kGather,
  kScatter,
  kSend,
  kRecv,
};
inline constexpr int kFuncCount = 10;

// How a call reaches the profiler and the trace: one Coll event and one CollRecord, or
// per-peer Send/Recv pieces (P2p events; P2pRecords whose parent_func names the call).
enum class FuncShape : uint8_t { kCollective, kPieces, kSend, kRecv };

// nccl-tests' bus-bandwidth factor: busBw = algBw x factor(n).
enum class BusFactor : uint8_t { kOne, kNMinusOneOverN, kTwoNMinusOneOverN };

// Every name below views a string literal: .data() is NUL-terminated and static, as a
// profiler descriptor's const char* must be.
struct FuncInfo {
  Func func;
  std::string_view name;   // ncclFuncToString: what descriptors carry and records keep
  FuncShape shape;
  bool rooted;             // takes a root rank
  bool per_rank_count;     // the API count is per rank, so nccl-tests' S = payload x n
  BusFactor bus_factor;
  bool synchronizing;      // every member leaves together: its ends anchor clock alignment
};

inline constexpr FuncInfo kFuncs[kFuncCount] = {
    {Func::kAllReduce, "AllReduce", FuncShape::kCollective, false, false, BusFactor::kTwoNMinusOneOverN, true},
    {Func::kAllGather, "AllGather", FuncShape::kCollective, false, true, BusFactor::kNMinusOneOverN, true},
    {Func::kReduceScatter, "ReduceScatter", FuncShape::kCollective, false, true, BusFactor::kNMinusOneOverN, true},
    {Func::kBroadcast, "Broadcast", FuncShape::kCollective, true, false, BusFactor::kOne, false},
    {Func::kReduce, "Reduce", FuncShape::kCollective, true, false, BusFactor::kOne, false},
    {Func::kAlltoAll, "AlltoAll", FuncShape::kPieces, false, true, BusFactor::kNMinusOneOverN, false},
    {Func::kGather, "Gather", FuncShape::kPieces, true, true, BusFactor::kNMinusOneOverN, false},
    {Func::kScatter, "Scatter", FuncShape::kPieces, true, true, BusFactor::kNMinusOneOverN, false},
    {Func::kSend, "Send", FuncShape::kSend, false, false, BusFactor::kOne, false},
    {Func::kRecv, "Recv", FuncShape::kRecv, false, false, BusFactor::kOne, false},
};

constexpr const FuncInfo& funcInfo(Func f) { return kFuncs[static_cast<int>(f)]; }
constexpr std::string_view funcName(Func f) { return funcInfo(f).name; }
constexpr bool isCollective(Func f) { return funcInfo(f).shape == FuncShape::kCollective; }

// The function of a descriptor's or record's name; nullptr for names NCCL does not use.
constexpr const FuncInfo* findFunc(std::string_view name) {
  for (const FuncInfo& f : kFuncs) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

// Every member leaves together (the shortest GPU duration is the transfer, ends anchor
// clocks). Broadcast and Reduce are not: their root-driven pipelines let members finish at
// different times; p2p pairs are only two ranks.
constexpr bool isSynchronizing(std::string_view func) {
  const FuncInfo* f = findFunc(func);
  return f != nullptr && f->synchronizing;
}

// nccl-tests' bus-bandwidth factor for n ranks.
constexpr double busBwFactor(Func f, int n) {
  if (n <= 0) return 1.0;
  switch (funcInfo(f).bus_factor) {
    case BusFactor::kTwoNMinusOneOverN: return 2.0 * (n - 1) / n;
    case BusFactor::kNMinusOneOverN: return static_cast<double>(n - 1) / n;
    case BusFactor::kOne: return 1.0;
  }
  return 1.0;
}
// 1 for a name NCCL does not use (nullptr: SendRecv, unknown).
constexpr double busBwFactor(const FuncInfo* f, int n) { return f != nullptr ? busBwFactor(f->func, n) : 1.0; }
// By name, as records carry it.
constexpr double busBwFactor(std::string_view func, int n) { return busBwFactor(findFunc(func), n); }

// nccl-tests' S from one rank's payload: times n where the API count is per rank.
constexpr uint64_t ncclTestsBytes(const FuncInfo* f, uint64_t per_rank_bytes, int n) {
  return f != nullptr && f->per_rank_count && n > 0 ? per_rank_bytes * static_cast<uint64_t>(n) : per_rank_bytes;
}
constexpr uint64_t ncclTestsBytes(std::string_view func, uint64_t per_rank_bytes, int n) {
  return ncclTestsBytes(findFunc(func), per_rank_bytes, n);
}

// The size classes live metrics break busBw down by, in bytes per rank: few, so that the
// metrics' label sets stay bounded. 0: "<64KiB", 1: "64KiB-1MiB", 2: "1MiB-16MiB", 3: ">=16MiB".
constexpr int sizeClassOf(uint64_t bytes) { return bytes < (64u << 10) ? 0 : bytes < (1u << 20) ? 1 : bytes < (16u << 20) ? 2 : 3; }
constexpr std::string_view sizeClassName(int size_class) {
  constexpr std::string_view kNames[] = {"<64KiB", "64KiB-1MiB", "1MiB-16MiB", ">=16MiB"};
  return kNames[size_class < 0 ? 0 : size_class > 3 ? 3 : size_class];
}

// ---- datatypes ----

// ncclDataType_t (nccl.h); the aliases ncclChar, ncclInt, ncclHalf, ncclFloat and ncclDouble
// share these values.
enum DataType : int {
  kInt8 = 0,
  kUint8 = 1,
  kInt32 = 2,
  kUint32 = 3,
  kInt64 = 4,
  kUint64 = 5,
  kFloat16 = 6,
  kFloat32 = 7,
  kFloat64 = 8,
  kBfloat16 = 9,
  kFloat8e4m3 = 10,
  kFloat8e5m2 = 11,
};
inline constexpr int kDatatypeCount = 12;

// What the profiler descriptors call a datatype NCCL cannot name: ncclDatatypeToString has
// no case for ncclUint8 (2.26-2.31), so a uint8 buffer reaches a plugin as "Unknown".
inline constexpr std::string_view kUnknownName = "Unknown";

struct DatatypeInfo {
  DataType value;
  std::string_view name;        // its name in nccl.h, which records and scenarios use
  std::string_view descr_name;  // what a profiler descriptor carries for it
  uint8_t size;                 // bytes per element
};

inline constexpr DatatypeInfo kDatatypes[kDatatypeCount] = {
    {kInt8, "ncclInt8", "ncclInt8", 1},
    {kUint8, "ncclUint8", kUnknownName, 1},
    {kInt32, "ncclInt32", "ncclInt32", 4},
    {kUint32, "ncclUint32", "ncclUint32", 4},
    {kInt64, "ncclInt64", "ncclInt64", 8},
    {kUint64, "ncclUint64", "ncclUint64", 8},
    {kFloat16, "ncclFloat16", "ncclFloat16", 2},
    {kFloat32, "ncclFloat32", "ncclFloat32", 4},
    {kFloat64, "ncclFloat64", "ncclFloat64", 8},
    {kBfloat16, "ncclBfloat16", "ncclBfloat16", 2},
    {kFloat8e4m3, "ncclFloat8e4m3", "ncclFloat8e4m3", 1},
    {kFloat8e5m2, "ncclFloat8e5m2", "ncclFloat8e5m2", 1},
};

constexpr bool valuesAreIndices() {
  for (int i = 0; i < kDatatypeCount; ++i) {
    if (kDatatypes[i].value != i) return false;
  }
  return true;
}
static_assert(valuesAreIndices(), "kDatatypes is indexed by ncclDataType_t");

struct DatatypeAlias {
  std::string_view name;
  DataType value;
};
inline constexpr DatatypeAlias kDatatypeAliases[] = {
    {"ncclChar", kInt8}, {"ncclInt", kInt32}, {"ncclHalf", kFloat16}, {"ncclFloat", kFloat32}, {"ncclDouble", kFloat64}};

// By ncclDataType_t value; nullptr for a value nccl.h does not define.
constexpr const DatatypeInfo* datatypeByValue(int value) {
  return value >= 0 && value < kDatatypeCount ? &kDatatypes[value] : nullptr;
}

// By nccl.h name or alias; nullptr otherwise ("Unknown" included: it names no one type).
constexpr const DatatypeInfo* findDatatype(std::string_view name) {
  for (const DatatypeInfo& d : kDatatypes) {
    if (d.name == name) return &d;
  }
  for (const DatatypeAlias& a : kDatatypeAliases) {
    if (a.name == name) return &kDatatypes[a.value];
  }
  return nullptr;
}

// Bytes per element of a name as a descriptor or record carries it; 0 when unknown
// ("Unknown" may be ncclUint8 or any type a future NCCL adds: the size stays unknown).
constexpr uint8_t sizeOfNamed(std::string_view name) {
  const DatatypeInfo* d = findDatatype(name);
  return d != nullptr ? d->size : 0;
}

// ---- algorithms and protocols (ncclAlgoToString / ncclProtoToString spellings) ----

enum class Algo : uint8_t { kTree, kRing, kCollnetDirect, kCollnetChain, kNvls, kNvlsTree, kPat };
inline constexpr std::string_view kAlgoNames[] = {"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN",
                                                  "NVLS", "NVLS_TREE", "PAT"};
enum class Proto : uint8_t { kLL, kLL128, kSimple };
inline constexpr std::string_view kProtoNames[] = {"LL", "LL128", "SIMPLE"};

constexpr std::string_view algoName(Algo a) { return kAlgoNames[static_cast<int>(a)]; }
constexpr std::string_view protoName(Proto p) { return kProtoNames[static_cast<int>(p)]; }

// The table's own copy of a name (static storage, as NCCL's are), or nullptr.
template <size_t N>
constexpr const std::string_view* findName(const std::string_view (&names)[N], std::string_view name) {
  for (const std::string_view& n : names) {
    if (n == name) return &n;
  }
  return nullptr;
}

// ---- device kernels ----

// Whether a GPU kernel is one of NCCL's, by its name: "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
// (older NCCL: "ncclKernel_...", and NCCL's other kernels: every name NCCL's kernels take begins
// "nccl"), as Kineto shows it, or as CUPTI reports it, Itanium-mangled:
// "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE" (seen on an
// H100 with NCCL 2.28.9). The mangled form is "_Z", the identifier's length, the identifier.
constexpr bool isNcclKernelName(std::string_view name) {
  if (name.starts_with("_Z")) {
    name.remove_prefix(2);
    while (!name.empty() && name.front() >= '0' && name.front() <= '9') name.remove_prefix(1);
  }
  return name.starts_with("nccl");
}

// The NVTX domain NCCL puts its ranges in (one per API call: ncclAllReduce, ncclGroupEnd, ...).
inline constexpr std::string_view kNvtxDomain = "NCCL";

// ---- ncclResult_t ----

enum Result : int {
  kSuccess = 0,
  kUnhandledCudaError = 1,
  kSystemError = 2,
  kInternalError = 3,
  kInvalidArgument = 4,
  kInvalidUsage = 5,
  kRemoteError = 6,
  kInProgress = 7,  // non-blocking communicators: accepted, goes on
};
inline constexpr std::string_view kResultNames[] = {
    "ncclSuccess",      "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
    "ncclInvalidArgument", "ncclInvalidUsage",    "ncclRemoteError", "ncclInProgress"};

constexpr std::string_view resultName(int result) {
  return result >= 0 && result < static_cast<int>(std::size(kResultNames)) ? kResultNames[result] : "ncclResult?";
}

}  // namespace commtrace::nccl
