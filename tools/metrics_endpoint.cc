#include "tools/metrics_endpoint.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "tools/tcp_listen.h"

namespace commtrace::tools {

MetricsEndpoint::~MetricsEndpoint() {
  if (wake_fds_[1] >= 0) (void)!write(wake_fds_[1], "x", 1);
  if (thread_.joinable()) thread_.join();
  for (Client& c : clients_) close(c.fd);
  for (int fd : {listen_fd_, wake_fds_[0], wake_fds_[1]})
    if (fd >= 0) close(fd);
}

bool MetricsEndpoint::start(const std::string& host, uint16_t port, std::ostream& err) {
  std::string why;
  const TcpListener listener = listenTcp(host, port, /*nonblocking=*/true, why);
  if (listener.fd < 0) {
    err << "commtrace: metrics endpoint: cannot listen on " << host << ":" << port << ": " << why << "; no /metrics (the alerts go on)\n";
    return false;
  }
  listen_fd_ = listener.fd;
  port_ = listener.port;
  if (pipe2(wake_fds_, O_CLOEXEC | O_NONBLOCK) != 0) {
    err << "commtrace: metrics endpoint: pipe: " << std::strerror(errno) << "; no /metrics (the alerts go on)\n";
    return false;
  }
  thread_ = std::thread([this] { serve(); });
  return true;
}

void MetricsEndpoint::publish(std::string text) {
  std::lock_guard lock(mutex_);
  text_ = std::move(text);
}

void MetricsEndpoint::serve() {
  std::vector<pollfd> polled;
  for (;;) {
    polled.assign({{wake_fds_[0], POLLIN, 0}, {listen_fd_, POLLIN, 0}});
    for (const Client& c : clients_) polled.push_back({c.fd, static_cast<short>(c.response.empty() ? POLLIN : POLLOUT), 0});
    Clock::time_point now = Clock::now();
    auto wait = std::chrono::milliseconds(1000);
    for (const Client& c : clients_)
      wait = std::min(wait, std::chrono::ceil<std::chrono::milliseconds>(std::max(c.deadline - now, Clock::duration::zero())));
    if (poll(polled.data(), polled.size(), static_cast<int>(wait.count())) < 0 && errno != EINTR) return;
    if (polled[0].revents != 0) return;  // stopping
    now = Clock::now();
    for (size_t i = 0; i < clients_.size(); ++i) {
      if (polled[2 + i].revents == 0 && now < clients_[i].deadline) continue;
      if (!advance(clients_[i], now)) {
        close(clients_[i].fd);
        clients_[i].fd = -1;
      }
    }
    std::erase_if(clients_, [](const Client& c) { return c.fd < 0; });
    if (polled[1].revents != 0) acceptClients(now);
  }
}

void MetricsEndpoint::acceptClients(Clock::time_point now) {
  for (;;) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    if (clients_.size() >= kMaxClients) {  // the oldest makes room: a scraper comes back every interval
      close(clients_.front().fd);
      clients_.erase(clients_.begin());
    }
    clients_.push_back({.fd = fd, .deadline = now + kRequestSeconds, .request = {}, .response = {}, .sent = 0});
  }
}

bool MetricsEndpoint::advance(Client& client, Clock::time_point now) {
  if (now >= client.deadline) return false;
  if (client.response.empty()) {
    char buffer[1024];
    const ssize_t n = recv(client.fd, buffer, sizeof buffer, MSG_DONTWAIT);
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    if (n == 0) return false;
    client.request.append(buffer, static_cast<size_t>(n));
    if (client.request.find("\r\n\r\n") == std::string::npos) return client.request.size() < kMaxRequestBytes;
    client.response = answer(client.request);
    client.deadline = now + kResponseSeconds;
  }
  const ssize_t n = send(client.fd, client.response.data() + client.sent, client.response.size() - client.sent, MSG_NOSIGNAL | MSG_DONTWAIT);
  if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
  client.sent += static_cast<size_t>(n);
  return client.sent < client.response.size();
}

std::string MetricsEndpoint::answer(const std::string& request) {
  const bool metrics = request.rfind("GET /metrics ", 0) == 0 || request.rfind("GET /metrics?", 0) == 0;
  std::string body;
  if (metrics) {
    std::lock_guard lock(mutex_);
    body = text_;
  } else {
    body = "commtrace collector: the metrics are at /metrics\n";
  }
  return std::string(metrics ? "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
                             : "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\n") +
         "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
}

}  // namespace commtrace::tools
