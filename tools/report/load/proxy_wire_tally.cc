#include "tools/report/load/proxy_wire_tally.h"

namespace commtrace::report {

void ProxyWireTally::add(const ProxyStepRecord& step) {
  ++recorded_;
  // state_ns: GPUWait, PeerWait, Wait, in NCCL's order for a send.
  const uint64_t peer_wait = step.state_ns[1], on_wire = step.state_ns[2];
  if (step.is_send == 0 || step.trans_bytes < kMinWireStepBytes || on_wire == 0 || step.cpu_end_ns < on_wire) return;
  WireSums& s = sends_[{step.comm_id, step.peer}];
  if (step.cpu_end_ns - on_wire < kMinWireNs) {
    ++s.instant_steps;
    return;
  }
  ++s.steps;
  s.bytes += step.trans_bytes;
  s.wire_ns += step.cpu_end_ns - on_wire;
  if (peer_wait != 0 && peer_wait <= on_wire) s.peer_wait_ns += on_wire - peer_wait;
}

void ProxyWireTally::merge(const ProxyWireTally& other) {
  for (const auto& [key, sums] : other.sends_) sends_[key].merge(sums);
  recorded_ += other.recorded_;
}

}  // namespace commtrace::report
