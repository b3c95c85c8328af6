// The collector's /metrics endpoint: Prometheus scrapes the live metrics over HTTP
// (`commtrace collect --metrics HOST:PORT`). Read-only and unauthenticated, like any
// exporter's; it serves the text the live loop last published, on a thread of its own, so
// that a slow or hostile scraper (1 s to send its request, 8 KB at most) never holds up the
// digests.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>

namespace commtrace::tools {

class MetricsEndpoint {
 public:
  MetricsEndpoint() = default;
  ~MetricsEndpoint();
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;

  // Listens on HOST:PORT ("" host: every interface); false with a "commtrace: ..." line on err.
  bool start(const std::string& host, uint16_t port, std::ostream& err);
  uint16_t port() const { return port_; }
  void publish(std::string text);

 private:
  void serve();
  void answer(int fd);

  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::mutex mutex_;
  std::string text_;
  std::thread thread_;
};

}  // namespace commtrace::tools
