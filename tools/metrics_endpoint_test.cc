// The collector's /metrics over HTTP: the text last published at /metrics, a 404 elsewhere,
// and clients served side by side: neither a silent one, nor one dribbling its request, nor a
// crowd of them holds a scrape up.
#include "tools/metrics_endpoint.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>
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

// A client sending its request a byte every half second timed out every scrape while the
// endpoint served one client at a time.
TEST(MetricsEndpoint, ADribblingClientDelaysNoScrape) {
  MetricsEndpoint endpoint;
  std::ostringstream err;
  ASSERT_TRUE(endpoint.start("127.0.0.1", 0, err)) << err.str();
  endpoint.publish("x 1\n");
  const int slow = connectTo(endpoint.port());
  std::atomic<bool> done{false};
  std::thread dribble([&] {
    const std::string request = "GET /metrics HTTP/1.1\r\nHost: a-very-slow-client\r\n\r\n";
    for (size_t i = 0; i < request.size() && !done; ++i) {
      send(slow, &request[i], 1, MSG_NOSIGNAL);
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  });
  for (int i = 0; i < 5; ++i) {
    const auto start = std::chrono::steady_clock::now();
    EXPECT_NE(get(endpoint.port(), "/metrics").find("x 1\n"), std::string::npos);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(300)) << "scrape " << i;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  done = true;
  dribble.join();
  close(slow);
}

TEST(MetricsEndpoint, ACrowdOfSilentClientsMakesRoomForTheScrape) {
  MetricsEndpoint endpoint;
  std::ostringstream err;
  ASSERT_TRUE(endpoint.start("127.0.0.1", 0, err)) << err.str();
  endpoint.publish("x 2\n");
  std::vector<int> crowd;
  for (size_t i = 0; i < 2 * MetricsEndpoint::kMaxClients; ++i) crowd.push_back(connectTo(endpoint.port()));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto start = std::chrono::steady_clock::now();
  EXPECT_NE(get(endpoint.port(), "/metrics").find("x 2\n"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500));
  for (int fd : crowd) close(fd);
}

}  // namespace
}  // namespace commtrace::tools
