#include "tools/report/analyses/live_drops.h"

#include <algorithm>

namespace commtrace::report {

void LiveDrops::observe(const RecordBatch& batch) {
  const uint64_t at = std::max(batch.position_ns, batch.heartbeat_utc_ns);
  const auto known = processes_.find(batch.process);
  if (known != processes_.end()) known->second.latest_utc_ns = std::max(known->second.latest_utc_ns, at);
  const auto seen = lost_so_far_.find(batch.process);
  const uint64_t before = seen == lost_so_far_.end() ? 0 : seen->second;
  if (batch.dropped_records <= before) return;
  lost_so_far_[batch.process] = batch.dropped_records;
  Process& p = processes_[batch.process];
  p.latest_utc_ns = std::max(p.latest_utc_ns, at);
  if (!p.dropping && !p.rose) p.episode_start = before, p.alert.since_utc_ns = at;
  p.last_loss_utc_ns = at;
  p.rose = true;
  p.alert.process = batch.process;
  p.alert.lost = batch.dropped_records - p.episode_start;
  p.alert.lost_total = batch.dropped_records;
}

void LiveDrops::judge() {
  for (auto& [process, p] : processes_) {
    if (p.rose && !p.dropping) {
      p.dropping = true;
      p.alert.kind = DropAlert::Kind::kDrops;
      on_alert_(p.alert);
    } else if (!p.rose && p.dropping && p.latest_utc_ns >= p.last_loss_utc_ns + options_.quiet_after_ns) {
      p.dropping = false;
      DropAlert recovered = p.alert;
      recovered.kind = DropAlert::Kind::kRecovered;
      recovered.since_utc_ns = p.last_loss_utc_ns;
      on_alert_(recovered);
    }
    p.rose = false;
  }
}

}  // namespace commtrace::report
