#include "nccl-plugin/in_flight_report.h"

#include <algorithm>
#include <array>

#include "core/record.h"
#include "nccl-plugin/op_pool.h"
#include "ringbuffer/ringbuffer.h"

namespace commtrace::plugin {
namespace {

// Communicators followed per scan; a process with more ops in flight on more communicators at
// once is past what any job does (the rest go unreported, never misreported).
constexpr size_t kMaxComms = 256;

struct Oldest {
  uint64_t comm_id = 0;
  SharedSnapshot op{};
  uint32_t in_flight = 0;
};

// The flusher thread's own: what the previous scan reported as stuck.
std::array<uint64_t, kMaxComms> g_reported{};
size_t g_reported_count = 0;
uint64_t g_last_scan_ns = 0;

// The oldest op in flight per communicator, in a fixed table (no allocation).
size_t collectOldest(std::array<Oldest, kMaxComms>& table) {
  size_t used = 0;
  OpPool::global().forEachLiveSnapshot(roleBit(Role::kColl) | roleBit(Role::kP2p), [&](const SharedSnapshot& op) {
    if (op.cpu_start_ns == 0) return;  // its start is being written
    Oldest* entry = std::find_if(table.begin(), table.begin() + used, [&](const Oldest& o) { return o.comm_id == op.comm_id; });
    if (entry == table.begin() + used) {
      if (used == kMaxComms) return;
      *entry = Oldest{op.comm_id, op, 0};
      ++used;
    }
    ++entry->in_flight;
    if (op.cpu_start_ns < entry->op.cpu_start_ns) entry->op = op;
  });
  return used;
}

void recordStuck(const Oldest& o, uint64_t now_ns) {
  record(InFlightRecord{.comm_id = o.comm_id,
                        .op_index = o.op.op_index,
                        .seq = o.op.seq,
                        .cpu_start_ns = o.op.cpu_start_ns,
                        .cpu_seen_ns = now_ns,
                        .func = o.op.func,
                        .peer = o.op.root_or_peer,  // -1 for collectives
                        .in_flight = o.in_flight});
}

}  // namespace

void reportOpsInFlight(uint64_t now_ns) {
  if (now_ns - g_last_scan_ns < kInFlightReportPeriodNs) return;
  g_last_scan_ns = now_ns;
  std::array<Oldest, kMaxComms> oldest;
  const size_t used = collectOldest(oldest);
  std::array<uint64_t, kMaxComms> stuck{};
  size_t stuck_count = 0;
  for (size_t i = 0; i < used; ++i) {
    if (now_ns - oldest[i].op.cpu_start_ns < kStuckAfterNs) continue;
    recordStuck(oldest[i], now_ns);
    stuck[stuck_count++] = oldest[i].comm_id;
  }
  for (size_t i = 0; i < g_reported_count; ++i) {
    if (std::find(stuck.begin(), stuck.begin() + stuck_count, g_reported[i]) != stuck.begin() + stuck_count) continue;
    record(InFlightRecord{.comm_id = g_reported[i], .cpu_seen_ns = now_ns, .peer = -1, .in_flight = 0});
  }
  g_reported = stuck;
  g_reported_count = stuck_count;
}

}  // namespace commtrace::plugin
