#include "sink/collector_address.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>

namespace commtrace {
namespace {

bool sameAddress(const sockaddr* a, const sockaddr* b) {
  if (a == nullptr || b == nullptr || a->sa_family != b->sa_family) return false;
  if (a->sa_family == AF_INET)
    return reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr == reinterpret_cast<const sockaddr_in*>(b)->sin_addr.s_addr;
  return a->sa_family == AF_INET6 &&
         std::memcmp(&reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr, &reinterpret_cast<const sockaddr_in6*>(b)->sin6_addr, sizeof(in6_addr)) == 0;
}

bool isLoopback(const sockaddr* a) {
  if (a->sa_family == AF_INET) return (ntohl(reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr) >> 24) == 127;
  return a->sa_family == AF_INET6 && IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr);
}

bool isThisHosts(const sockaddr* a) {
  ifaddrs* interfaces = nullptr;
  if (getifaddrs(&interfaces) != 0) return false;
  bool found = false;
  for (const ifaddrs* i = interfaces; i != nullptr && !found; i = i->ifa_next) found = sameAddress(i->ifa_addr, a);
  freeifaddrs(interfaces);
  return found;
}

bool writtenAsLoopback(const std::string& master) {
  if (master == "localhost") return true;
  in_addr v4{};
  in6_addr v6{};
  if (inet_pton(AF_INET, master.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  return inet_pton(AF_INET6, master.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

}  // namespace

std::string collectorListenHost(const std::string& bind, const std::string& master) {
  if (!bind.empty()) return bind;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(master.c_str(), nullptr, &hints, &found) != 0 || found == nullptr) return "0.0.0.0";
  const bool v6 = found->ai_family == AF_INET6;
  const bool usable = isLoopback(found->ai_addr) ? writtenAsLoopback(master) : isThisHosts(found->ai_addr);
  char numeric[NI_MAXHOST] = {};
  const bool named = getnameinfo(found->ai_addr, found->ai_addrlen, numeric, sizeof numeric, nullptr, 0, NI_NUMERICHOST) == 0;
  freeaddrinfo(found);
  if (usable && named) return numeric;
  return v6 ? "::" : "0.0.0.0";
}

}  // namespace commtrace
