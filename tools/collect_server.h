// `commtrace collect`'s network side: listens on one TCP port, greets every connection with a
// fresh challenge, and appends each authenticated message (collect_protocol.h) to a stream
// per process held in memory, named from the FileHeader its first message carries: the bytes
// of the trace file the process would have written with the live kinds, which the engine that
// follows a run directory (`commtrace watch`) reads as it reads a file, never touching a disk.
// A process that reconnects continues its stream. With a spool directory the streams are also
// kept there as trace files. A connection that sends anything else (another key, garbage, a
// replay, an oversize message) is closed, its peer named on stderr once; nothing it sent is
// kept. What peers can make it hold before their messages are verified is capped across all
// connections (Options::max_unverified_bytes).
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

namespace commtrace::tools {

class CollectServer {
 public:
  struct Options {
    std::string host = "0.0.0.0";
    uint16_t port = 0;  // 0: any free port (tests)
    collect::LinkKey key{};
    std::string spool_dir;  // non-empty: also keep every process's stream here as a trace file
    size_t max_connections = 65536;
    size_t max_unverified_bytes = 16u << 20;  // beyond it, the connection that would add to it is refused
  };
  struct Stream {
    std::string name;  // HOST-pidPID-START.ctrace, as its spool file is named
    std::shared_ptr<StreamBytes> bytes;
  };
  struct Stats {
    uint64_t accepted = 0;
    uint64_t refused = 0;  // connections closed for what they sent
    uint64_t messages = 0;
    uint64_t bytes = 0;
  };

  explicit CollectServer(Options options);
  ~CollectServer();

  // Binds and listens; false with a complete "commtrace: ..." line on err (a port taken says so).
  bool start(std::ostream& err);
  uint16_t port() const { return port_; }
  // Serves connections for about `seconds`, returning early only on a fatal error.
  void serveFor(double seconds, std::ostream& err);
  size_t openConnections() const { return connections_.size(); }
  const Stats& stats() const { return stats_; }
  // The streams of processes first heard from since the last call.
  std::vector<Stream> takeNewStreams() { return std::exchange(new_streams_, {}); }
  size_t unverifiedBytes() const { return unverified_bytes_; }

 private:
  struct Connection;
  void accept();
  // false: the connection ends (closed by its peer, or refused for `why`). hung_up: epoll
  // saw the peer's end; read until it.
  bool readFrom(Connection& c, bool hung_up, std::string& why);
  // Bytes read from c: its whole messages delivered, what is held unverified counted.
  bool take(Connection& c, std::span<const uint8_t> bytes, std::string& why);
  bool deliver(Connection& c, std::span<const uint8_t> payload, std::string& why);
  bool attach(Connection& c, std::span<const uint8_t>& payload, std::string& why);
  int closeConnection(Connection& c);  // -1, its new fd

  Options options_;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  uint16_t port_ = 0;
  std::vector<std::unique_ptr<Connection>> connections_;  // the epoll data of each is its Connection*
  std::vector<std::string> warned_peers_;
  std::unordered_map<std::string, std::shared_ptr<StreamBytes>> streams_;  // by name: every process heard from
  std::vector<Stream> new_streams_;
  size_t unverified_bytes_ = 0;
  Stats stats_;
};

}  // namespace commtrace::tools
