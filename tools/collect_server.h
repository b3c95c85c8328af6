// `commtrace collect`'s network side: listens on one TCP port, greets every connection with a
// fresh challenge, and appends each authenticated message (collect_protocol.h) to a stream
// per process held in memory, named from the FileHeader its first message carries: the bytes
// of the trace file the process would have written with the live kinds, which the engine that
// follows a run directory (`commtrace watch`) reads as it reads a file, never touching a disk.
// A process that reconnects continues its stream. With a spool directory the streams are also
// kept there as trace files. A connection that sends anything else (another key, garbage, a
// replay, an oversize message) is told why and closed, and nothing it sent is kept; the job's
// log hears of refusals through a RefusalLog (a line, then a summary a minute at most).
//
// Strangers must not starve the job's ranks of it. Until a peer has sent a header sealed with
// the key (collect_protocol.h) it is "unproven": the server reads no byte past that header
// (48 bytes held at most), closes it if it has not proven itself within handshake_seconds,
// and holds at most max_unproven such connections, max_unproven_per_address from one address.
// Past max_unproven, newcomers wait in the listening socket's queue (16,384 ranks connecting
// at once get in as the first prove themselves, each with its first digest); past
// max_unproven_per_address, the newcomer from that address is refused (a flood from one
// address crowds out only itself). Closing the oldest unproven one for a newcomer instead
// refused every rank past the first 1,024 of a job connecting at once, for a minute. Out of
// descriptors, it closes the oldest unproven connection, else the newcomer, rather than
// spinning on a listening socket it cannot accept from.
#pragma once

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sink/byte_source.h"
#include "sink/collect_protocol.h"
#include "tools/refusal_log.h"

namespace commtrace::tools {

class CollectServer {
 public:
  struct Options {
    std::string host = "0.0.0.0";
    uint16_t port = 0;  // 0: any free port (tests)
    collect::LinkKey key{};
    std::string spool_dir;  // non-empty: also keep every process's stream here as a trace file
    size_t max_connections = 65536;
    double handshake_seconds = 5;
    size_t max_unproven = 1024;
    size_t max_unproven_per_address = 32;
  };
  struct Stream {
    std::string name;  // HOST-pidPID-START.ctrace, as its spool file is named
    std::shared_ptr<StreamBytes> bytes;
  };
  struct Stats {
    uint64_t accepted = 0;
    uint64_t refused = 0;  // connections closed for what they sent, or did not send in time, or to make room
    uint64_t messages = 0;
    uint64_t bytes = 0;
  };

  explicit CollectServer(Options options);
  ~CollectServer();

  // Binds and listens; false with a complete "commtrace: ..." line on err (a port taken says so).
  // Raises the process's soft limit on descriptors to its hard one: a connection per process.
  bool start(std::ostream& err);
  uint16_t port() const { return port_; }
  // Serves connections for about `seconds`, returning early only on a fatal error.
  void serveFor(double seconds, std::ostream& err);
  size_t openConnections() const { return connections_.size(); }
  const Stats& stats() const { return stats_; }
  // The streams of processes first heard from since the last call.
  std::vector<Stream> takeNewStreams() { return std::exchange(new_streams_, {}); }
  // Bytes held for connections not yet proven: at most a sealed header's each.
  size_t unprovenBytes() const;
  size_t refusalLines() const { return refusals_.lines(); }

 private:
  struct Connection;
  using Clock = RefusalLog::Clock;
  void accept(Clock::time_point now, std::ostream& err);
  // The oldest unproven connection closed (out of descriptors); false if there is none.
  bool closeOldestUnproven(Clock::time_point now, std::ostream& err);
  // Connections unproven past the handshake deadline closed.
  void closeSilent(Clock::time_point now, std::ostream& err);
  // Why a connection is refused: `kind` a fixed phrase the summaries count, `words` this one's.
  struct Refusal {
    std::string_view kind;
    std::string words;
  };
  // Ends c: its peer told why, the log told through refusals_.
  void refuse(Connection& c, const Refusal& why, Clock::time_point now, std::ostream& err);
  // false: the connection ends (closed by its peer, or refused for `why`). hung_up: epoll
  // saw the peer's end; read until it.
  bool readFrom(Connection& c, bool hung_up, Refusal& why);
  // Bytes read from c: its whole messages delivered.
  bool take(Connection& c, std::span<const uint8_t> bytes, Refusal& why);
  bool deliver(Connection& c, std::span<const uint8_t> payload, Refusal& why);
  bool attach(Connection& c, std::span<const uint8_t>& payload, Refusal& why);
  void closeConnection(Connection& c);  // its fd -1 after; erased from connections_ at the batch's end
  void forgetUnproven(Connection& c);

  Options options_;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  uint16_t port_ = 0;
  int spare_fd_ = -1;  // given up to accept and close a newcomer when descriptors run out
  std::vector<std::unique_ptr<Connection>> connections_;  // in order of arrival; the epoll data of each is its Connection*
  std::unordered_map<std::string, size_t> unproven_by_address_;
  size_t unproven_ = 0;
  RefusalLog refusals_;
  std::unordered_map<std::string, std::shared_ptr<StreamBytes>> streams_;  // by name: every process heard from
  std::vector<Stream> new_streams_;
  Stats stats_;
};

}  // namespace commtrace::tools
