#include "tools/report/analyses/live_drops.h"

#include <algorithm>

namespace commtrace::report {

void LiveDrops::observe(const RecordBatch& batch) {
  auto it = processes_.find(batch.process);
  const uint64_t before = it == processes_.end() ? 0 : it->second.alert.lost_total;
  if (batch.dropped_records > before) it = processes_.try_emplace(batch.process).first;
  if (it == processes_.end()) return;
  Process& p = it->second;
  const uint64_t at = std::max(batch.position_ns, batch.heartbeat_utc_ns);
  p.latest_utc_ns = std::max(p.latest_utc_ns, at);
  if (batch.dropped_records <= before) return;
  if (!p.dropping && !p.rose) p.episode_start = before, p.alert.since_utc_ns = at;
  p.last_loss_utc_ns = at;
  p.rose = true;
  p.alert.process = batch.process;
  p.alert.lost = batch.dropped_records - p.episode_start;
  p.alert.lost_total = batch.dropped_records;
}

std::map<int32_t, uint64_t> LiveDrops::lostSoFar() const {
  std::map<int32_t, uint64_t> out;
  for (const auto& [process, p] : processes_) out.emplace(process, p.alert.lost_total);
  return out;
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
