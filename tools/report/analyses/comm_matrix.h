// The communication matrix: bytes, time and bandwidth per (sender, receiver) global rank,
// for the whole run, per communicator and per func. Point-to-point cells are measured;
// collectives are decomposed by edge_model.h.
#pragma once

#include "tools/report/analyses/coll_shapes.h"
#include "tools/report/analyses/comm_matrix_rows.h"
#include "tools/report/analyses/transfer_cells.h"
#include "tools/report/load/run_model.h"

namespace commtrace::report {

// A cell's time is the summed transfer time (op_metrics.h) of the ops that crossed it.
// Ops whose size was not recorded add nothing, and ranks whose global rank is unknown have
// no row; CommMatrix::model says how many of either there were.
// shapes and transfers: the run's collectives summed by shape (coll_shapes.h) and its
// transfers by cell (transfer_cells.h), as the stream fed them.
CommMatrix communicationMatrix(const RunModel& run, const CollShapeTally& shapes, const TransferCellTally& transfers);
// The same for a run held whole.
CommMatrix communicationMatrix(const RunModel& run);

}  // namespace commtrace::report
