// Where rank 0's collector listens: the address the ranks send to when it is this host's,
// loopback only for a job written as one host, every interface otherwise.
#include "sink/collector_address.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

namespace commtrace {
namespace {

// A non-loopback IPv4 address of this host, or "".
std::string anAddressOfThisHost() {
  ifaddrs* interfaces = nullptr;
  if (getifaddrs(&interfaces) != 0) return "";
  std::string out;
  for (const ifaddrs* i = interfaces; i != nullptr && out.empty(); i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    const in_addr a = reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr;
    if ((ntohl(a.s_addr) >> 24) == 127) continue;
    char text[INET_ADDRSTRLEN];
    out = inet_ntop(AF_INET, &a, text, sizeof text);
  }
  freeifaddrs(interfaces);
  return out;
}

TEST(CollectorAddress, TheSettingWins) { EXPECT_EQ(collectorListenHost("10.9.8.7", "127.0.0.1"), "10.9.8.7"); }

TEST(CollectorAddress, AOneHostJobListensOnLoopbackOnly) {
  EXPECT_EQ(collectorListenHost("", "127.0.0.1"), "127.0.0.1");
  EXPECT_EQ(collectorListenHost("", "::1"), "::1");
  const std::string localhost = collectorListenHost("", "localhost");
  EXPECT_TRUE(localhost == "127.0.0.1" || localhost == "::1") << localhost;
}

TEST(CollectorAddress, MasterAddrOfThisHostIsWhereItListens) {
  const std::string mine = anAddressOfThisHost();
  if (mine.empty()) GTEST_SKIP() << "this host has no address but loopback";
  EXPECT_EQ(collectorListenHost("", mine), mine);
}

TEST(CollectorAddress, AnAddressNotThisHostsOrANameResolvingToLoopbackListensEverywhere) {
  EXPECT_EQ(collectorListenHost("", "198.51.100.7"), "0.0.0.0") << "a NAT or virtual address: bind cannot take it";
  EXPECT_EQ(collectorListenHost("", "2001:db8::7"), "::");
  EXPECT_EQ(collectorListenHost("", "no-such-host.invalid"), "0.0.0.0");
}

}  // namespace
}  // namespace commtrace
