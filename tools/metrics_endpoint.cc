#include "tools/metrics_endpoint.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tools/tcp_listen.h"

namespace commtrace::tools {

MetricsEndpoint::~MetricsEndpoint() {
  stopping_ = true;
  if (listen_fd_ >= 0) shutdown(listen_fd_, SHUT_RDWR);  // wakes accept()
  if (thread_.joinable()) thread_.join();
  if (listen_fd_ >= 0) close(listen_fd_);
}

bool MetricsEndpoint::start(const std::string& host, uint16_t port, std::ostream& err) {
  std::string why;
  const TcpListener listener = listenTcp(host, port, /*nonblocking=*/false, why);
  if (listener.fd < 0) {
    err << "commtrace: metrics endpoint: cannot listen on " << host << ":" << port << ": " << why << "; no /metrics (the alerts go on)\n";
    return false;
  }
  listen_fd_ = listener.fd;
  port_ = listener.port;
  thread_ = std::thread([this] { serve(); });
  return true;
}

void MetricsEndpoint::publish(std::string text) {
  std::lock_guard lock(mutex_);
  text_ = std::move(text);
}

void MetricsEndpoint::serve() {
  while (!stopping_) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;  // shut down
    }
    const timeval limit{.tv_sec = 1, .tv_usec = 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
    answer(fd);
    close(fd);
  }
}

void MetricsEndpoint::answer(int fd) {
  std::string request;
  char buffer[1024];
  while (request.find("\r\n\r\n") == std::string::npos && request.size() < 8192) {
    const ssize_t n = recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) return;
    request.append(buffer, static_cast<size_t>(n));
  }
  const bool metrics = request.rfind("GET /metrics ", 0) == 0 || request.rfind("GET /metrics?", 0) == 0;
  std::string body;
  if (metrics) {
    std::lock_guard lock(mutex_);
    body = text_;
  } else {
    body = "commtrace collector: the metrics are at /metrics\n";
  }
  const std::string response = std::string(metrics ? "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
                                                   : "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\n") +
                               "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
  for (size_t sent = 0; sent < response.size();) {
    const ssize_t n = send(fd, response.data() + sent, response.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;
    sent += static_cast<size_t>(n);
  }
}

}  // namespace commtrace::tools
