// Slow links: for each pair of ranks, the best bandwidth any bandwidth-bound op crossing it
// achieved, against the median of the links of the same kind (intra-host or inter-host).
#pragma once

#include <cstdint>
#include <vector>

#include "tools/report/analyses/coll_shapes.h"
#include "tools/report/analyses/slow_links_rows.h"
#include "tools/report/analyses/transfer_cells.h"
#include "tools/report/load/run_model.h"

namespace commtrace::report {

// A link is flagged when even its best op stayed below this fraction of its kind's median:
// the best of many ops is immune to one-off contention, so a link that never reached half
// of what its peers typically reach is slow every time it is used.
constexpr double kSlowLinkRatio = 0.5;
// A median of fewer links says nothing about what is normal.
constexpr int kMinLinksOfAKind = 3;
// A link timed by NCCL's proxy over fewer steps than this is judged with less confidence.
constexpr double kMinWireSteps = 16;
// At most this many rows: every flagged link, then the slowest of the rest.
constexpr size_t kMaxLinkRows = 100;

// Where NCCL's proxy timed a link's sends (ProxyStep records), the link is judged by its own
// time on the wire against the links of its kind timed so (proxy_wire_tally.h): a slow link
// inside a big ring, which slows every op and so every pair the model sees, is told apart.
// Point-to-point transfers count their bytes over their transfer time; a collective counts
// its busBw on each of its modelled edges (edge_model.h), so a pair crossed only by
// collectives that also cross a slower pair inherits their bandwidth: taking the best op
// clears every pair that some faster op crossed. Sorted: flagged first, then by the ratio
// to the kind's median, lowest first.
// shapes and transfers: the run's collectives summed by shape (coll_shapes.h) and its
// transfers by cell (transfer_cells.h; kMinLinkBytes is there), as the stream fed them.
std::vector<SlowLinkRow> slowLinks(const RunModel& run, const CollShapeTally& shapes, const TransferCellTally& transfers);
// The same for a run held whole.
std::vector<SlowLinkRow> slowLinks(const RunModel& run);
// The row was judged by the proxy's wire timing (enough links of its kind timed so), not by its ops.
bool judgedByWire(const SlowLinkRow& row);

}  // namespace commtrace::report
