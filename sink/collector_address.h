// Where the job's collector listens, as rank 0's library starts it: on the address the ranks
// send to, not on every interface of rank 0's host (where strangers on another network, or a
// login network, could reach it).
#pragma once

#include <string>

namespace commtrace {

// `bind` (COMMTRACE_COLLECT_BIND) when set; else MASTER_ADDR's address when it is one of this
// host's, a loopback one only when MASTER_ADDR is written as one ("127.0.0.1", "localhost":
// a one-host job); else every interface ("0.0.0.0", or "::" for an IPv6 MASTER_ADDR): a name
// that resolves to 127.0.1.1 here (Debian's /etc/hosts) is the host's real address elsewhere.
std::string collectorListenHost(const std::string& bind, const std::string& master);

}  // namespace commtrace
