#include "sink/digest_sender.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

namespace commtrace {

DigestSender::DigestSender(Options options) : options_(std::move(options)) {}

DigestSender::~DigestSender() {
  if (fd_ >= 0) close(fd_);
}

void DigestSender::abandonAfterFork() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  state_ = State::kIdle;
  keyed_ = false;
}

void DigestSender::setKey(const collect::LinkKey& key, uint64_t now_ns) {
  key_ = key;
  keyed_ = true;
  quiet_until_ns_ = now_ns + kGraceNs;
}

void DigestSender::fail(const char* what, int error, uint64_t now_ns, bool refused) {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  state_ = State::kIdle;
  queued_.clear();
  queued_sent_ = 0;
  const bool grace = now_ns < quiet_until_ns_ && !refused;
  next_attempt_ns_ = now_ns + (refused ? kRefusedRetryNs : grace ? 500'000'000u : uint64_t{options_.retry_ms} * 1'000'000u);
  if (warned_ || grace || options_.quiet) return;
  warned_ = true;
  std::fprintf(stderr, "commtrace: live collector at %s:%u %s%s%s; live digests of this process are dropped until it answers "
               "(the trace file is unaffected)\n", options_.host.c_str(), options_.port, what, error != 0 ? ": " : "",
               error != 0 ? strerror(error) : "");
}

// The address is resolved on every attempt (a restarted collector may have moved): a name in
// /etc/hosts or a numeric address, as launchers set MASTER_ADDR, resolves without a wait.
void DigestSender::startConnect(uint64_t now_ns) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(options_.port);
  if (getaddrinfo(options_.host.c_str(), port.c_str(), &hints, &found) != 0 || found == nullptr) {
    fail("cannot be resolved", 0, now_ns);
    return;
  }
  fd_ = socket(found->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  const int connected = fd_ < 0 ? -1 : connect(fd_, found->ai_addr, found->ai_addrlen);
  const int error = errno;
  freeaddrinfo(found);
  if (connected == 0 || error == EINPROGRESS) {
    state_ = connected == 0 ? State::kGreeting : State::kConnecting;
    greeting_bytes_ = 0;
    return;
  }
  fail("unreachable", error, now_ns);
}

void DigestSender::pump(uint64_t now_ns) {
  if (!keyed_) return;
  if (state_ == State::kIdle) {
    if (now_ns < next_attempt_ns_) return;
    startConnect(now_ns);
  }
  if (state_ == State::kConnecting) {
    pollfd p{fd_, POLLOUT, 0};
    if (poll(&p, 1, 0) <= 0) return;
    int error = 0;
    socklen_t size = sizeof error;
    getsockopt(fd_, SOL_SOCKET, SO_ERROR, &error, &size);
    if (error != 0) return fail("unreachable", error, now_ns);
    state_ = State::kGreeting;
  }
  if (state_ == State::kGreeting) {
    const ssize_t n = recv(fd_, greeting_ + greeting_bytes_, sizeof greeting_ - greeting_bytes_, MSG_DONTWAIT);
    if (n == 0) return fail("closed the connection", 0, now_ns);
    if (n < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) fail("unreachable", errno, now_ns);
      return;
    }
    greeting_bytes_ += static_cast<size_t>(n);
    if (greeting_bytes_ < sizeof greeting_) return;
    if (!collect::parseGreeting(greeting_, challenge_)) return fail("is not a commtrace collector", 0, now_ns);
    state_ = State::kReady;
    refusal_bytes_ = 0;
    number_ = 0;
    needs_header_ = true;
    ++stats_.connections;
  }
  if (state_ == State::kReady && !heardRefusal(now_ns)) sendQueued(now_ns);
}

bool DigestSender::heardRefusal(uint64_t now_ns) {
  const ssize_t n = recv(fd_, refusal_ + refusal_bytes_, sizeof refusal_ - refusal_bytes_, MSG_DONTWAIT);
  if (n < 0) return false;  // nothing (or an error the next send meets)
  refusal_bytes_ += static_cast<size_t>(n);
  std::string reason;
  if (collect::parseRefusal({refusal_, refusal_bytes_}, reason)) {
    fail(("refused this process: " + reason).c_str(), 0, now_ns, /*refused=*/true);
    return true;
  }
  if (n > 0 && refusal_bytes_ < sizeof refusal_) return false;  // the rest of it to come
  fail("closed the connection", 0, now_ns);
  return true;
}

bool DigestSender::sendQueued(uint64_t now_ns) {
  while (queued_sent_ < queued_.size()) {
    const ssize_t n = send(fd_, queued_.data() + queued_sent_, queued_.size() - queued_sent_, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return true;
      const int error = errno;
      if (!heardRefusal(now_ns)) fail("dropped the connection", error, now_ns);
      return false;
    }
    queued_sent_ += static_cast<size_t>(n);
    stats_.bytes_sent += static_cast<uint64_t>(n);
  }
  queued_.clear();
  queued_sent_ = 0;
  return true;
}

bool DigestSender::offer(std::span<const uint8_t> payload, uint64_t now_ns) {
  pump(now_ns);
  const size_t message = collect::kHeaderBytes + payload.size() + collect::kMacBytes;
  if (state_ != State::kReady || payload.size() > collect::kMaxPayload ||
      queued_.size() - queued_sent_ + message > options_.max_queued_bytes) {
    ++stats_.digests_dropped;
    return false;
  }
  collect::appendMessage(queued_, key_, challenge_, number_++, payload);
  needs_header_ = false;
  ++stats_.messages_sent;
  sendQueued(now_ns);
  return true;
}

}  // namespace commtrace
