// The per-op numbers every analysis shares: nccl-tests' message size S and bus-bandwidth
// factor (one table, shared/reference/nccl-profiler.md section 8), and an op's transfer
// time measured without comparing clocks across ranks.
#pragma once

#include <cstdint>
#include <string_view>

#include "tools/report/analyses/p2p_calls.h"
#include "tools/report/run_model.h"

namespace commtrace::report {

// nccl-tests' S for one op from the per-rank payload: times n for the funcs whose API count
// is per rank (AllGather, ReduceScatter, AlltoAll, Gather, Scatter), else the payload.
uint64_t ncclTestsBytes(std::string_view func, uint64_t per_rank_bytes, int n);

// busBw / algBw: AllReduce 2(n-1)/n; AllGather, ReduceScatter, AlltoAll, Gather, Scatter
// (n-1)/n; Broadcast, Reduce, Send/Recv and anything else 1.
double busBwFactor(std::string_view func, int n);

// Collectives whose members all stop together, so that the shortest GPU duration is the
// transfer and duration differences are arrival skew (stragglers.md 2.2). Broadcast and
// Reduce are not: their root-driven pipelines let members finish at different times.
bool isSynchronizing(std::string_view func);

// A collective's transfer time: the shortest GPU duration among the members that recorded
// GPU times (the last to arrive waits for nobody). 0 when none did.
uint64_t transferNs(const RunModel& run, const CollInstance& c);

// An AlltoAll/Gather/Scatter call's, the same way: the shortest GPU span (first piece start
// to last piece end) among the members' parts.
uint64_t transferNs(const P2pCall& call);

// A point-to-point transfer's: the shorter of the two sides' GPU durations (the side that
// arrived later did not wait), or the one side that has them. 0 when neither does.
uint64_t transferNs(const P2pTransfer& t);

// Bytes over nanoseconds is GB/s (1e9 bytes/s), as nccl-tests prints bandwidth.
inline double gbPerS(double bytes, uint64_t ns) { return ns == 0 ? 0.0 : bytes / static_cast<double>(ns); }

}  // namespace commtrace::report
