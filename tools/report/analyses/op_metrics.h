// The per-op numbers every analysis shares: nccl-tests' message size S and bus-bandwidth
// factor (from the one NCCL table, core/nccl_vocab.h), and an op's transfer time measured
// without comparing clocks across ranks.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "core/nccl_vocab.h"
#include "tools/report/analyses/p2p_calls.h"
#include "tools/report/load/run_model.h"

namespace commtrace::report {

// nccl-tests' S from the per-rank payload, and busBw / algBw, by func name.
using nccl::busBwFactor;
using nccl::isSynchronizing;  // members all stop together: durations differ by arrival skew
using nccl::ncclTestsBytes;


// A collective's transfer time: the shortest GPU duration among the members that recorded
// GPU times (the last to arrive waits for nobody). 0 when none did.
uint64_t transferNs(std::span<const MemberView> members);
uint64_t transferNs(const RunModel& run, const CollInstance& c);

// An AlltoAll/Gather/Scatter call's, the same way: the shortest GPU span (first piece start
// to last piece end) among the members' parts.
uint64_t transferNs(const P2pCall& call);

// A point-to-point transfer's: the shorter of the two sides' GPU durations (the side that
// arrived later did not wait), or the one side that has them. 0 when neither does.
uint64_t transferNs(const P2pTransfer& t);

// Every point-to-point transfer's transfer time, indexed like RunModel::transfers: a plain
// send/receive its own (above); a piece of an AlltoAll/Gather/Scatter its call's, because
// each piece's own span includes waiting for the call's other ranks. A piece to itself (a
// local copy) and a piece no call claimed keep their own. The matrix and the Perfetto
// export take it from here; the bandwidth table samples whole calls with transferNs(call).
std::vector<uint64_t> transferTimes(const RunModel& run);

// Bytes over nanoseconds is GB/s (1e9 bytes/s), as nccl-tests prints bandwidth.
inline double gbPerS(double bytes, uint64_t ns) { return ns == 0 ? 0.0 : bytes / static_cast<double>(ns); }

}  // namespace commtrace::report
