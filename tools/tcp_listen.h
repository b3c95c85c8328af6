// One listening TCP socket on HOST:PORT (port 0: the kernel's choice), for the collector's
// digests and its /metrics: resolved, bound with SO_REUSEADDR, close-on-exec.
#pragma once

#include <cstdint>
#include <string>

namespace commtrace::tools {

struct TcpListener {
  int fd = -1;
  uint16_t port = 0;  // the port bound
  int error = 0;      // errno of the failed call (EADDRINUSE: the port is taken)
};

// fd < 0 on failure, with errno's words (or why the host did not resolve) in `why`.
TcpListener listenTcp(const std::string& host, uint16_t port, bool nonblocking, std::string& why);

}  // namespace commtrace::tools
