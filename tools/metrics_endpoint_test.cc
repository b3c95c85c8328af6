// The collector's /metrics over HTTP: the text last published at /metrics, a 404 elsewhere,
// and a scraper that never sends its request holds nobody up for more than a second.
#include "tools/metrics_endpoint.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <sstream>

#include "tests/support/http_get.h"

namespace commtrace::tools {
namespace {

int connectTo(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  return fd;
}

std::string get(uint16_t port, const std::string& path) { return testutil::httpGet(port, path); }

TEST(MetricsEndpoint, ServesTheLastPublishedTextAtMetrics) {
  MetricsEndpoint endpoint;
  std::ostringstream err;
  ASSERT_TRUE(endpoint.start("127.0.0.1", 0, err)) << err.str();
  endpoint.publish("commtrace_collectives_total{comm=\"dp.0\"} 1\n");
  endpoint.publish("commtrace_collectives_total{comm=\"dp.0\"} 2\n");
  const std::string ok = get(endpoint.port(), "/metrics");
  EXPECT_EQ(ok.rfind("HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4", 0), 0u) << ok;
  EXPECT_NE(ok.find("\r\n\r\ncommtrace_collectives_total{comm=\"dp.0\"} 2\n"), std::string::npos) << ok;
  EXPECT_EQ(get(endpoint.port(), "/").rfind("HTTP/1.1 404 Not Found", 0), 0u);
}

TEST(MetricsEndpoint, ASilentScraperHoldsTheNextOneUpASecondAtMost) {
  MetricsEndpoint endpoint;
  std::ostringstream err;
  ASSERT_TRUE(endpoint.start("127.0.0.1", 0, err)) << err.str();
  endpoint.publish("x 1\n");
  const int silent = connectTo(endpoint.port());
  const auto start = std::chrono::steady_clock::now();
  EXPECT_NE(get(endpoint.port(), "/metrics").find("x 1\n"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1800));
  close(silent);
}

}  // namespace
}  // namespace commtrace::tools
