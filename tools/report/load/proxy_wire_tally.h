// A process's network sends as NCCL's proxy timed them (ProxyStep records, recorded with
// COMMTRACE_PROXY_EVENTS=1), summed per communicator and peer as its file is read. A send
// step waits for the GPU to fill it (SendGPUWait), for the peer's clear-to-send credit
// (SendPeerWait), then for the network to carry it (SendWait to the step's end): only that
// last part is the link's. In a ring with one slow link every rank's op is slow, but only the
// slow link's sender spends its steps on the wire; the others wait for credit or for data.
#pragma once

#include <cstdint>
#include <map>
#include <utility>

#include "core/record.h"

namespace commtrace::report {

struct WireSums {
  uint64_t steps = 0;
  uint64_t bytes = 0;
  uint64_t wire_ns = 0;       // SendWait to the step's end
  uint64_t peer_wait_ns = 0;  // SendPeerWait to SendWait
  uint64_t instant_steps = 0;  // steps of kMinWireStepBytes or more on the wire under kMinWireNs: not in the sums

  double gbs() const { return wire_ns > 0 ? static_cast<double>(bytes) / static_cast<double>(wire_ns) : 0.0; }
  void merge(const WireSums& other) {
    steps += other.steps;
    bytes += other.bytes;
    wire_ns += other.wire_ns;
    peer_wait_ns += other.peer_wait_ns;
    instant_steps += other.instant_steps;
  }
  template <class Archive>
  void serialize(Archive& ar) {
    ar(steps, bytes, wire_ns, peer_wait_ns, instant_steps);
  }
};

// Smaller steps are latency-bound: their time says little about the link's bandwidth.
constexpr uint64_t kMinWireStepBytes = 64 * 1024;
// No network carries a step in less (its latency alone is microseconds): a step timed so was
// not timed on the wire (a stand-in that reports its states at once).
constexpr uint64_t kMinWireNs = 1000;

class ProxyWireTally {
 public:
  // A step that is not a send, lacks its SendWait time or its size (plugins of NCCL's v3
  // interface forward no transSize), or is smaller than kMinWireStepBytes says nothing about
  // the wire's bandwidth and is left out.
  void add(const ProxyStepRecord& step);
  // (comm_id, peer's comm rank) -> its send steps' sums
  const std::map<std::pair<uint64_t, int32_t>, WireSums>& sends() const { return sends_; }
  // Every ProxyStep record added, left out or not: whether the run recorded them at all.
  uint64_t recorded() const { return recorded_; }

  // Adds another tally of the same process: a shard's, of another stretch of its run.
  void merge(const ProxyWireTally& other);
  // A shard's state (tools/report/shard/).
  template <class Archive>
  void serialize(Archive& ar) {
    ar(sends_, recorded_);
  }

 private:
  std::map<std::pair<uint64_t, int32_t>, WireSums> sends_;
  uint64_t recorded_ = 0;
};

}  // namespace commtrace::report
