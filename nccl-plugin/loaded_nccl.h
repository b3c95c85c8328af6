// Which NCCL loaded the plugin face, and so which ncclProfiler_v7 layout its descriptors
// have. Public code knows several incompatible v7 layouts: NVIDIA NCCL 2.31 appends
// userTag to CollApi/P2pApi/Coll/P2p/CeColl and kernelVariant/isSymColl to Coll, and bit 15
// of the mask is its KernelPhase; RCCL's v7 has no userTag; proposals keep the v6
// descriptor under the v7 name. Only NVIDIA NCCL at a version known to define the 2.31
// layout gets its v7-only fields read; every other v7 caller is read as v6.
#pragma once

#include <cstdint>

namespace commtrace::plugin {

struct LoadedNccl {
  int version = 0;         // ncclGetVersion's code (2.31.2 is 23102); 0 when not found
  bool is_rccl = false;    // the library defining it is AMD's RCCL
};

// Cold: looks ncclGetVersion up in the process (the global scope, then an already loaded
// libnccl/librccl), calls it, and names the library that defined it.
LoadedNccl findLoadedNccl();

// The first NVIDIA NCCL whose ncclProfiler_v7 is the layout profiler_abi.h declares.
inline constexpr int kFirstNcclWithV7Layout = 23100;

constexpr bool hasNvidiaV7Layout(const LoadedNccl& nccl) {
  return !nccl.is_rccl && nccl.version >= kFirstNcclWithV7Layout;
}

}  // namespace commtrace::plugin
