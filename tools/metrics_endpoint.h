// The collector's /metrics endpoint: Prometheus scrapes the live metrics over HTTP
// (`commtrace collect --metrics HOST:PORT`). Read-only and unauthenticated, like any
// exporter's; it serves the text the live loop last published, on a thread of its own, so
// that a slow or hostile client never holds up the digests. Clients are served side by side
// (non-blocking sockets under one poll): one sending its request a byte every half second
// (before: served one at a time, it timed every scrape out) delays nobody. A client has
// kRequestSeconds to send its request (8 KB at most) and kResponseSeconds to take the answer;
// at most kMaxClients at once, the oldest closed to make room.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

namespace commtrace::tools {

class MetricsEndpoint {
 public:
  static constexpr auto kRequestSeconds = std::chrono::seconds(2);
  static constexpr auto kResponseSeconds = std::chrono::seconds(10);
  static constexpr size_t kMaxClients = 64;
  static constexpr size_t kMaxRequestBytes = 8192;

  MetricsEndpoint() = default;
  ~MetricsEndpoint();
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;

  // Listens on HOST:PORT ("" host: every interface); false with a "commtrace: ..." line on err.
  bool start(const std::string& host, uint16_t port, std::ostream& err);
  uint16_t port() const { return port_; }
  void publish(std::string text);

 private:
  using Clock = std::chrono::steady_clock;
  struct Client {
    int fd = -1;
    Clock::time_point deadline;
    std::string request;
    std::string response;  // non-empty once the request is whole
    size_t sent = 0;
  };
  void serve();
  void acceptClients(Clock::time_point now);
  // false: the client is done (answered, gone or out of time).
  bool advance(Client& client, Clock::time_point now);
  std::string answer(const std::string& request);

  int listen_fd_ = -1;
  int wake_fds_[2] = {-1, -1};  // a pipe: a byte on it ends serve()
  uint16_t port_ = 0;
  std::mutex mutex_;
  std::string text_;
  std::vector<Client> clients_;  // the serving thread's only
  std::thread thread_;
};

}  // namespace commtrace::tools
