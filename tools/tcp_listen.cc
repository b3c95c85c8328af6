#include "tools/tcp_listen.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace commtrace::tools {

TcpListener listenTcp(const std::string& host, uint16_t port, bool nonblocking, std::string& why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.empty() ? nullptr : host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0 || found == nullptr) {
    why = "cannot resolve " + host;
    return {};
  }
  TcpListener out;
  out.fd = socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC | (nonblocking ? SOCK_NONBLOCK : 0), 0);
  const int one = 1;
  if (out.fd >= 0) setsockopt(out.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  const bool bound = out.fd >= 0 && bind(out.fd, found->ai_addr, found->ai_addrlen) == 0 && listen(out.fd, SOMAXCONN) == 0;
  const int error = errno;
  freeaddrinfo(found);
  if (!bound) {
    if (out.fd >= 0) close(out.fd);
    why = std::strerror(error);
    return {.error = error};
  }
  sockaddr_storage addr{};
  socklen_t size = sizeof addr;
  getsockname(out.fd, reinterpret_cast<sockaddr*>(&addr), &size);
  out.port = ntohs(addr.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port
                                              : reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  return out;
}

}  // namespace commtrace::tools
