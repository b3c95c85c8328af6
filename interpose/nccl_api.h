// Our declarations of the public NCCL API the preload face wraps: the types as the ABI
// passes them (opaque pointers, int-sized enums, the 128-byte unique id by value) and the
// values commtrace reads, written from NCCL 2.28's nccl.h as facts. Every NCCL since 2.x
// keeps these values and signatures; ncclCommShrink (2.27) and ncclCommInitRankScalable
// (2.23) are newer, and a wrapper whose real function is missing says so once and answers
// ncclInvalidUsage.
//
// The functions are declared here so that the wrappers' definitions (nccl_wrappers.cc),
// the fake library (tests/fakes/fake_nccl.cc) and test programs are all checked against one
// signature each.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/nccl_vocab.h"

namespace commtrace::nccl_api {

// Where NCCL lives when a program dlopens it out of our lookup scope (real_symbol.h).
inline constexpr const char* kNcclSonames[] = {"libnccl.so.2", nullptr};

// ncclResult_t, ncclDataType_t and their values, from the project's one NCCL table.
using namespace commtrace::nccl;
using Result = nccl::Result;
using DataType = nccl::DataType;

inline constexpr size_t kUniqueIdBytes = 128;  // NCCL_UNIQUE_ID_BYTES
struct UniqueId {
  char internal[kUniqueIdBytes];
};
static_assert(sizeof(UniqueId) == 128);

inline constexpr int kSplitNoColor = -1;  // NCCL_SPLIT_NOCOLOR: this rank joins no new communicator

struct Comm;                        // struct ncclComm
using CommHandle = Comm*;           // ncclComm_t
struct Config;                      // ncclConfig_t: read only by NCCL
using RedOp = int;                  // ncclRedOp_t
using Stream = void*;               // cudaStream_t

}  // namespace commtrace::nccl_api

extern "C" {
namespace na = commtrace::nccl_api;

na::Result ncclCommInitRank(na::CommHandle* comm, int n_ranks, na::UniqueId id, int rank);
na::Result ncclCommInitRankConfig(na::CommHandle* comm, int n_ranks, na::UniqueId id, int rank, na::Config* config);
na::Result ncclCommInitRankScalable(na::CommHandle* comm, int n_ranks, int rank, int n_ids, na::UniqueId* ids,
                                    na::Config* config);
na::Result ncclCommInitAll(na::CommHandle* comms, int n_devices, const int* devices);
na::Result ncclCommSplit(na::CommHandle comm, int color, int key, na::CommHandle* new_comm, na::Config* config);
na::Result ncclCommShrink(na::CommHandle comm, int* exclude_ranks, int exclude_count, na::CommHandle* new_comm,
                          na::Config* config, int shrink_flags);
na::Result ncclCommDestroy(na::CommHandle comm);
na::Result ncclCommAbort(na::CommHandle comm);
na::Result ncclCommFinalize(na::CommHandle comm);
na::Result ncclCommCount(const na::CommHandle comm, int* count);
na::Result ncclCommUserRank(const na::CommHandle comm, int* rank);
na::Result ncclCommCuDevice(const na::CommHandle comm, int* device);

na::Result ncclAllReduce(const void* send, void* recv, size_t count, na::DataType datatype, na::RedOp op,
                         na::CommHandle comm, na::Stream stream);
na::Result ncclBroadcast(const void* send, void* recv, size_t count, na::DataType datatype, int root,
                         na::CommHandle comm, na::Stream stream);
na::Result ncclBcast(void* buff, size_t count, na::DataType datatype, int root, na::CommHandle comm,
                     na::Stream stream);
na::Result ncclReduce(const void* send, void* recv, size_t count, na::DataType datatype, na::RedOp op, int root,
                      na::CommHandle comm, na::Stream stream);
na::Result ncclAllGather(const void* send, void* recv, size_t send_count, na::DataType datatype, na::CommHandle comm,
                         na::Stream stream);
na::Result ncclReduceScatter(const void* send, void* recv, size_t recv_count, na::DataType datatype, na::RedOp op,
                             na::CommHandle comm, na::Stream stream);
na::Result ncclAlltoAll(const void* send, void* recv, size_t count, na::DataType datatype, na::CommHandle comm,
                        na::Stream stream);
na::Result ncclGather(const void* send, void* recv, size_t count, na::DataType datatype, int root,
                      na::CommHandle comm, na::Stream stream);
na::Result ncclScatter(const void* send, void* recv, size_t count, na::DataType datatype, int root,
                       na::CommHandle comm, na::Stream stream);
na::Result ncclSend(const void* send, size_t count, na::DataType datatype, int peer, na::CommHandle comm,
                    na::Stream stream);
na::Result ncclRecv(void* recv, size_t count, na::DataType datatype, int peer, na::CommHandle comm,
                    na::Stream stream);
na::Result ncclGroupStart();
na::Result ncclGroupEnd();
}
