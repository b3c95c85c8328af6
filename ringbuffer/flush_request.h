// How a thread that is about to lose its records (a communicator finalizing, the process
// exiting, a signal) asks the flusher to write everything recorded so far, and waits for
// it, bounded. A request takes the next ticket and rings the doorbell; after each drain
// the flusher publishes the last ticket taken before that drain began (32-bit, compared
// modulo 2^32) and wakes the waiters. Atomics and a futex: async-signal-safe, no lock.
#pragma once

#include <atomic>
#include <cstdint>

#include "ringbuffer/doorbell.h"

namespace commtrace {

class FlushRequests {
 public:
  // Requester side. true once everything pushed before the call is written; false at once
  // when no flusher serves requests, or when timeout_ms passes first (a slow disk, or a
  // lock the interrupted thread holds). closing: the process is about to stop recording
  // (exit, exec, a terminating signal): the chunk that answers is marked so.
  bool requestAndWait(Doorbell& doorbell, uint32_t timeout_ms, bool closing = false);

  // Flusher side: serving from start() to stop(); before each drain, whether a closing
  // request is pending (taken first), then the ticket it answers; after the drain, that
  // ticket published.
  void setServing(bool serving) { serving_.store(serving, std::memory_order_release); }
  bool takeClosing() { return closing_.exchange(false, std::memory_order_acq_rel); }
  uint32_t ticketToServe() const { return taken_.load(std::memory_order_acquire); }
  void publishServed(uint32_t ticket);

  // In a forked child, whose flusher thread does not exist.
  void forgetAfterFork();

 private:
  std::atomic<bool> serving_{false};
  std::atomic<uint32_t> taken_{0};
  std::atomic<uint32_t> served_{0};
  std::atomic<bool> closing_{false};  // set after a closing request's ticket is taken
};

}  // namespace commtrace
