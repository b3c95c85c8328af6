// `commtrace collect`'s network side: listens on one TCP port, greets every connection with a
// fresh challenge, and appends each authenticated message (collect_protocol.h) to a spool file
// per process, named from the FileHeader its first message carries, so that the same engine
// that follows a run directory (`commtrace watch`) follows the spool. A process that
// reconnects continues its file. A connection that sends anything else (another key, garbage,
// a replay, an oversize message) is closed, its peer named on stderr once; nothing it sent is
// kept. Memory is bounded by the connections' whole messages (collect::kMaxPayload each).
#pragma once

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "sink/collect_protocol.h"

namespace commtrace::tools {

class CollectServer {
 public:
  struct Options {
    std::string host = "0.0.0.0";
    uint16_t port = 0;  // 0: any free port (tests)
    collect::LinkKey key{};
    std::string spool_dir;
    size_t max_connections = 65536;
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

 private:
  struct Connection;
  void accept();
  // false: the connection ends (closed by its peer, or refused for `why`).
  bool readFrom(Connection& c, std::string& why);
  bool spool(Connection& c, std::span<const uint8_t> payload, std::string& why);
  int closeConnection(int fd);  // -1

  Options options_;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  uint16_t port_ = 0;
  std::vector<std::unique_ptr<Connection>> connections_;  // the epoll data of each is its Connection*
  std::vector<std::string> warned_peers_;
  Stats stats_;
};

}  // namespace commtrace::tools
