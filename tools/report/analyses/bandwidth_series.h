// busBw over time, per communicator and func: when did a communicator get slow. Each
// collective instance's nccl-tests bytes and transfer time are summed in fine bins at its end
// on the GPU clock of the process in the communicator's first seat, and placed on the
// aligned timeline at the end, in the heatmap's kind of columns; a column's busBw is its
// summed bus bytes over its summed transfer time. Memory grows with the communicators and
// funcs, not the ops.
#pragma once

#include <map>
#include <span>
#include <utility>
#include <vector>

#include "tools/report/analyses/lateness_heatmap.h"
#include "tools/report/load/clock_align.h"
#include "tools/report/load/op_joiner.h"
#include "tools/report/report.h"
#include "tools/report/run_model.h"

namespace commtrace::report {

class BandwidthSeriesTally : public JoinedOpSink {
 public:
  void collective(const CollInstance& instance, std::span<const MemberView> members) override;
  void transfer(const P2pTransfer&) override {}
  void finish(std::span<const uint32_t> new_index) override;
  void merge(const BandwidthSeriesTally& other);

  struct Series {
    int process = -1;   // whose GPU clock the positions are on
    double busbw_factor = 0;
    FineBins bytes;     // nccl-tests S
    FineBins transfer_ns;
  };
  const std::map<std::pair<uint32_t, NameId>, Series>& series() const { return series_; }  // (comm, func)

 private:
  std::map<std::pair<uint32_t, NameId>, Series> series_;
};

// Empty (with axis "not aligned") when no process's clock could be aligned.
BandwidthSeries bandwidthSeries(const RunModel& run, const ClockAlignment& clocks, const BandwidthSeriesTally& tally);

}  // namespace commtrace::report
