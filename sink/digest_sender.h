// The process's end of the live link (collect_protocol.h): a TCP client on the flusher thread
// that never blocks it. Every call does what the socket allows at once (connect, read the
// collector's greeting, send what is queued) and returns; a digest offered while the link is
// down, unkeyed or backed up is dropped and counted, never queued without bound. A collector
// that is gone costs one "commtrace:" line for the life of the process, then a quiet retry
// every few seconds; the trace file is never affected.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "sink/collect_protocol.h"

namespace commtrace {

class DigestSender {
 public:
  struct Options {
    std::string host;  // a name or a numeric address
    uint16_t port = 0;
    uint32_t retry_ms = 5000;
    size_t max_queued_bytes = 256 * 1024;
    // Say nothing when the collector cannot be reached: in a job whose collector rank 0
    // starts, rank 0 says so once for all, rather than every rank once.
    bool quiet = false;
  };
  struct Stats {
    uint64_t messages_sent = 0;  // queued on a live connection
    uint64_t digests_dropped = 0;
    uint64_t connections = 0;
    uint64_t bytes_sent = 0;
  };

  explicit DigestSender(Options options);
  ~DigestSender();
  DigestSender(const DigestSender&) = delete;
  DigestSender& operator=(const DigestSender&) = delete;

  // Flusher thread only. Once the job's key is known: nothing is tried before. The collector
  // may still be starting (rank 0 starts it as the others start sending): for a grace
  // period, failures are retried every half second without a word.
  void setKey(const collect::LinkKey& key, uint64_t now_ns);
  bool keyed() const { return keyed_; }
  static constexpr uint64_t kGraceNs = 10'000'000'000;

  void pump(uint64_t now_ns);
  // Connected and greeted: an offer now is sent (if the queue has room).
  bool ready() const { return state_ == State::kReady; }
  // A new connection's first message must start with the trace's FileHeader frame.
  bool needsHeader() const { return needs_header_; }
  // Queues one message and sends what the socket takes; false (dropped, counted) when the link
  // is not up, the key not known, or the queue full.
  bool offer(std::span<const uint8_t> payload, uint64_t now_ns);
  Stats stats() const { return stats_; }
  // In a forked child: lets go of the parent's connection (closes the child's copy of the
  // socket, sends nothing). Allocation-free.
  void abandonAfterFork();

 private:
  enum class State : uint8_t { kIdle, kConnecting, kGreeting, kReady };
  void startConnect(uint64_t now_ns);
  // `refused`: the collector answered and said no; said even in the grace period, and the
  // next attempt waits kRefusedRetryNs.
  void fail(const char* what, int error, uint64_t now_ns, bool refused = false);
  bool sendQueued(uint64_t now_ns);
  // Reads what the collector sent after its greeting, which is nothing unless it refuses this
  // process; true (the link failed, the reason said) once it has refused or closed.
  bool heardRefusal(uint64_t now_ns);
  static constexpr uint64_t kRefusedRetryNs = 60'000'000'000;

  Options options_;
  State state_ = State::kIdle;
  int fd_ = -1;
  uint64_t next_attempt_ns_ = 0;
  bool warned_ = false;
  bool needs_header_ = false;
  bool keyed_ = false;
  uint64_t quiet_until_ns_ = 0;
  collect::LinkKey key_{};
  collect::Challenge challenge_{};
  uint8_t greeting_[collect::kGreetingBytes] = {};
  size_t greeting_bytes_ = 0;
  uint8_t refusal_[6 + collect::kMaxRefusalText] = {};
  size_t refusal_bytes_ = 0;
  uint64_t number_ = 0;
  wire::Bytes queued_;
  size_t queued_sent_ = 0;
  Stats stats_;
};

}  // namespace commtrace
