// How the preload face's NCCL wrappers learn, per call, whether the profiler-plugin face saw
// the same call, so that an op is recorded once: by the plugin when it will, else by the
// wrapper. Both faces live in libcommtrace.so and NCCL (v5+ plugins) starts the CollApi /
// P2pApi event on the caller's thread at API entry, so a thread-local flag is the whole
// handshake: the wrapper arms it around the forwarded call, the plugin's startApi marks it.
#pragma once

#include <atomic>
#include <cstdint>

namespace commtrace {

struct ApiWitness {
  bool armed;               // a wrapper is inside its forwarded call on this thread
  bool seen;                // the plugin started an API event meanwhile
  uint64_t plugin_comm_id;  // the comm id the plugin's context holds (NCCL's commHash)
};

// initial-exec: one %fs-relative access (the ring pointer's 8 bytes of static TLS surplus,
// plus these 16). constinit: read directly, with no TLS init wrapper.
extern constinit thread_local ApiWitness tl_api_witness __attribute__((tls_model("initial-exec")));

// The plugin's side, on every CollApi/P2pApi start: one TLS test and, when armed, one store.
inline void witnessApiEvent(uint64_t plugin_comm_id) {
  ApiWitness& w = tl_api_witness;
  if (w.armed) {
    w.seen = true;
    w.plugin_comm_id = plugin_comm_id;
  }
}

// Which ABI NCCL bound the plugin face to, process-wide: v5+ delivers API events (a call it
// covers is witnessed), v4 does not (ops are still recorded by it, from their Coll/P2p
// events; NCCL <= 2.27, so no copy-engine collectives).
enum class PluginApiEvents : uint8_t { kUnknown, kDelivered, kAbsent };

// Cold: the plugin's init, per communicator.
void notePluginApiEvents(bool delivered);
PluginApiEvents pluginApiEvents();

}  // namespace commtrace
