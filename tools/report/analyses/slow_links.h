// Slow links: for each pair of ranks, the best bandwidth any bandwidth-bound op crossing it
// achieved, against the median of the links of the same kind (intra-host or inter-host).
#pragma once

#include <cstdint>
#include <vector>

#include "tools/report/analyses/coll_shapes.h"
#include "tools/report/report.h"
#include "tools/report/run_model.h"

namespace commtrace::report {

// Ops that move less than this over a pair are latency-bound and say nothing about the
// link's bandwidth (a 4-byte AllReduce, the pieces of a small AlltoAll).
constexpr uint64_t kMinLinkBytes = 1 << 20;
// A link is flagged when even its best op stayed below this fraction of its kind's median:
// the best of many ops is immune to one-off contention, so a link that never reached half
// of what its peers typically reach is slow every time it is used.
constexpr double kSlowLinkRatio = 0.5;
// A median of fewer links says nothing about what is normal.
constexpr int kMinLinksOfAKind = 3;
// At most this many rows: every flagged link, then the slowest of the rest.
constexpr size_t kMaxLinkRows = 100;

// Point-to-point transfers count their bytes over their transfer time; a collective counts
// its busBw on each of its modelled edges (edge_model.h), so a pair crossed only by
// collectives that also cross a slower pair inherits their bandwidth: taking the best op
// clears every pair that some faster op crossed. Sorted: flagged first, then by the ratio
// to the kind's median, lowest first.
// shapes: the run's collectives summed by shape (coll_shapes.h), as the stream fed them.
std::vector<SlowLinkRow> slowLinks(const RunModel& run, const CollShapeTally& shapes);
// The same for a run held whole.
std::vector<SlowLinkRow> slowLinks(const RunModel& run);

}  // namespace commtrace::report
