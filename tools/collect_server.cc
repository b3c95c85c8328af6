#include "tools/collect_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <random>
#include <thread>
#include <tuple>

#include "sink/commtrace.pb.h"
#include "sink/frame.h"
#include "tools/tcp_listen.h"

namespace commtrace::tools {
namespace {

// The peer's address, and its address:port.
std::pair<std::string, std::string> peerOf(int fd) {
  sockaddr_storage addr{};
  socklen_t size = sizeof addr;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &size) != 0) return {"?", "an unknown peer"};
  char host[NI_MAXHOST] = {}, port[NI_MAXSERV] = {};
  getnameinfo(reinterpret_cast<sockaddr*>(&addr), size, host, sizeof host, port, sizeof port, NI_NUMERICHOST | NI_NUMERICSERV);
  return {host, std::string(host) + ":" + port};
}

// A 16k-rank job is 16k connections: the soft limit (often 1,024) raised to the hard one.
void raiseDescriptorLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= limit.rlim_max) return;
  limit.rlim_cur = limit.rlim_max;
  setrlimit(RLIMIT_NOFILE, &limit);
}

constexpr std::string_view kSilent = "no sealed header within the handshake time";
constexpr std::string_view kCrowded = "closed unproven to make room for newer connections";
constexpr std::string_view kNoDescriptor = "no descriptor left to serve it";

collect::Challenge freshChallenge() {
  static std::random_device device;  // the kernel's random source, opened once (the collector accepts on one thread)
  collect::Challenge c;
  for (uint8_t& b : c) b = static_cast<uint8_t>(device());
  return c;
}

// A host name as a file name: letters, digits, '.', '-' and '_' kept, the rest '_'.
std::string fileSafe(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '_';
  return s.empty() ? "host" : s;
}

bool writeAll(int fd, const uint8_t* p, size_t n) {
  while (n > 0) {
    const ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

struct CollectServer::Connection {
  int fd = -1;
  std::string address;  // the peer's
  std::string peer;     // address:port
  Clock::time_point accepted_at;
  collect::MessageReader reader;
  bool counted_unproven = true;  // in unproven_ and unproven_by_address_
  std::shared_ptr<StreamBytes> stream;  // its process's, from its first message on
  int spool_fd = -1;
  size_t spool_skip = 0;  // bytes of the next message not to spool (a header the file has)
  Connection(int f, Clock::time_point now, const collect::LinkKey& key, const collect::Challenge& challenge)
      : fd(f), accepted_at(now), reader(key, challenge) {
    std::tie(address, peer) = peerOf(f);
  }
  ~Connection() {
    if (fd >= 0) close(fd);
    if (spool_fd >= 0) close(spool_fd);
  }
};

CollectServer::CollectServer(Options options) : options_(std::move(options)) {}

CollectServer::~CollectServer() {
  if (listen_fd_ >= 0) close(listen_fd_);
  if (epoll_fd_ >= 0) close(epoll_fd_);
  if (spare_fd_ >= 0) close(spare_fd_);
}

size_t CollectServer::unprovenBytes() const {
  size_t bytes = 0;
  for (const auto& c : connections_)
    if (!c->reader.proven()) bytes += c->reader.buffered();
  return bytes;
}

bool CollectServer::start(std::ostream& err) {
  raiseDescriptorLimit();
  spare_fd_ = open("/dev/null", O_RDONLY | O_CLOEXEC);
  std::string why;
  const TcpListener listener = listenTcp(options_.host, options_.port, /*nonblocking=*/true, why);
  if (listener.fd < 0) {
    err << "commtrace: collector: cannot listen on " << options_.host << ":" << options_.port << ": " << why
        << (listener.error == EADDRINUSE ? " (another program has the port: choose another with COMMTRACE_COLLECT_PORT or --listen)" : "")
        << "\n";
    return false;
  }
  listen_fd_ = listener.fd;
  port_ = listener.port;
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  epoll_event listening{.events = EPOLLIN, .data = {.ptr = nullptr}};
  if (epoll_fd_ < 0 || epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &listening) != 0) {
    err << "commtrace: collector: epoll: " << std::strerror(errno) << "\n";
    return false;
  }
  std::error_code ec;
  if (!options_.spool_dir.empty()) std::filesystem::create_directories(options_.spool_dir, ec);
  return true;
}

void CollectServer::accept(Clock::time_point now, std::ostream& err) {
  for (;;) {
    // As many unproven as it holds (a job's processes connecting at once, each proving itself
    // with its first digest): the newcomers wait in the listening socket's queue, not refused;
    // the unproven leave as they prove themselves, or at the handshake time.
    if (unproven_ >= options_.max_unproven) return;
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0 && (errno == EMFILE || errno == ENFILE)) {
      // Out of descriptors, the listening socket stays readable: not accepting would spin.
      if (closeOldestUnproven(now, err)) continue;
      if (spare_fd_ >= 0) close(spare_fd_);
      fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) close(fd);
      spare_fd_ = open("/dev/null", O_RDONLY | O_CLOEXEC);
      if (fd < 0) return;
      ++stats_.refused;
      refusals_.note(kNoDescriptor, std::string(kNoDescriptor), "a newcomer", "?", now, err);
      continue;
    }
    if (fd < 0) return;
    if (connections_.size() >= options_.max_connections) {
      close(fd);
      ++stats_.refused;
      continue;
    }
    const collect::Challenge challenge = freshChallenge();
    wire::Bytes greeting;
    collect::appendGreeting(greeting, challenge);
    if (send(fd, greeting.data(), greeting.size(), MSG_NOSIGNAL | MSG_DONTWAIT) != static_cast<ssize_t>(greeting.size())) {
      close(fd);
      continue;
    }
    auto connection = std::make_unique<Connection>(fd, now, options_.key, challenge);
    epoll_event readable{.events = EPOLLIN | EPOLLRDHUP | EPOLLET, .data = {.ptr = connection.get()}};
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &readable) != 0) continue;  // closed with the connection
    ++unproven_;
    const size_t from_address = ++unproven_by_address_[connection->address];
    if (from_address > options_.max_unproven_per_address) {
      refuse(*connection, {kCrowded, std::string(kCrowded)}, now, err);  // a flood from one address crowds out itself
      continue;
    }
    ++stats_.accepted;
    connections_.push_back(std::move(connection));
  }
}

// Connections are in order of arrival: the first unproven one found is the oldest.
bool CollectServer::closeOldestUnproven(Clock::time_point now, std::ostream& err) {
  for (auto& c : connections_)
    if (c->fd >= 0 && c->counted_unproven) {
      refuse(*c, {kCrowded, std::string(kCrowded)}, now, err);
      return true;
    }
  return false;
}

void CollectServer::closeSilent(Clock::time_point now, std::ostream& err) {
  const auto deadline = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options_.handshake_seconds));
  for (auto& c : connections_) {
    if (c->fd < 0 || !c->counted_unproven) continue;
    if (now - c->accepted_at < deadline) break;  // in order of arrival: the rest are younger
    refuse(*c, {kSilent, std::string(kSilent)}, now, err);
  }
}

// The first message names the process (its FileHeader frame): a new stream, or the one of an
// earlier connection of the same process, continued without a second header.
bool CollectServer::attach(Connection& c, std::span<const uint8_t>& payload, Refusal& why) {
  const auto header = payload.size() >= frame::kHeaderBytes ? frame::parseHeader(payload.data()) : std::nullopt;
  trace::v1::FileHeader h;
  if (!header || header->type != frame::Type::kFileHeader || payload.size() < frame::kHeaderBytes + header->length ||
      !h.ParseFromArray(payload.data() + frame::kHeaderBytes, static_cast<int>(header->length))) {
    why = {"first message not a trace header", "its first message is not a trace header"};
    return false;
  }
  const std::string name = fileSafe(h.host()) + "-pid" + std::to_string(h.pid()) + "-" + std::to_string(h.start_realtime_ns()) + ".ctrace";
  auto [known, fresh] = streams_.try_emplace(name);
  if (fresh) {
    known->second = std::make_shared<StreamBytes>();
    new_streams_.push_back({name, known->second});
  } else {
    payload = payload.subspan(frame::kHeaderBytes + header->length);
  }
  c.stream = known->second;
  if (options_.spool_dir.empty()) return true;
  const std::string path = options_.spool_dir + "/" + name;
  c.spool_fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
  // A file an earlier collector left (restarted on the same spool) is continued as the
  // stream is: without a second header.
  struct stat st {};
  if (c.spool_fd >= 0 && fresh && fstat(c.spool_fd, &st) == 0 && st.st_size > 0) c.spool_skip = frame::kHeaderBytes + header->length;
  if (c.spool_fd >= 0) return true;
  why = {"spool not writable", "cannot write " + path + ": " + std::strerror(errno)};
  return false;
}

bool CollectServer::deliver(Connection& c, std::span<const uint8_t> payload, Refusal& why) {
  if (c.stream == nullptr && !attach(c, payload, why)) return false;
  c.stream->append(payload);
  const std::span<const uint8_t> spooled = payload.subspan(std::exchange(c.spool_skip, 0));
  if (c.spool_fd >= 0 && !writeAll(c.spool_fd, spooled.data(), spooled.size())) {
    why = {"spool not writable", std::string("cannot write the spool: ") + std::strerror(errno)};
    return false;
  }
  ++stats_.messages;
  stats_.bytes += payload.size();
  return true;
}

// Connections are edge-triggered: a level-triggered epoll polls every socket it reported
// once more at the next wait (sock_poll was 8 % of the collector at 1,024 ranks). A read
// shorter than the buffer emptied the socket, so the next bytes make a new edge: no recv
// is spent only to hear EAGAIN. After a hang-up, reads go on until the end is read. An
// unproven peer's reads stop at its sealed header (MessageReader::acceptable).
bool CollectServer::readFrom(Connection& c, bool hung_up, Refusal& why) {
  uint8_t buffer[64 * 1024];
  for (;;) {
    const size_t wanted = std::min(sizeof buffer, c.reader.acceptable());
    const ssize_t n = recv(c.fd, buffer, wanted, MSG_DONTWAIT);
    if (n == 0) return false;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK;
    if (!take(c, {buffer, static_cast<size_t>(n)}, why)) return false;
    if (static_cast<size_t>(n) < wanted && !hung_up) return true;
  }
}

bool CollectServer::take(Connection& c, std::span<const uint8_t> bytes, Refusal& why) {
  c.reader.feed(bytes);
  for (std::span<const uint8_t> payload; c.reader.next(payload);)
    if (!deliver(c, payload, why)) return false;
  if (c.counted_unproven && c.reader.proven()) forgetUnproven(c);
  if (c.reader.fault().empty()) return true;
  why = {c.reader.fault(), c.reader.fault()};
  return false;
}

// Readiness from epoll (a wake costs what is ready, not what is connected), handled in
// batches at most every kBatch: a thousand processes' digests, each arriving on its own
// flusher's schedule, cost tens of wakes a second, not a thousand. The listening socket is
// served in each batch too, so newcomers wait at most a batch while the unproven are full.
void CollectServer::serveFor(double seconds, std::ostream& err) {
  constexpr auto kBatch = std::chrono::milliseconds(50);
  const Clock::time_point until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  std::vector<epoll_event> events;
  for (Clock::time_point now = Clock::now(); now < until; now = Clock::now()) {
    // Room for every connection's readiness in one wake: with a fixed 256 a batch, 16,384
    // ranks' digests a second outran the batches (256 every 50 ms) and queued up.
    events.resize(std::max<size_t>(256, connections_.size() + 1));
    const int wait_ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(until - now).count()) + 1;
    const int n = epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), std::min(wait_ms, 1000));
    now = Clock::now();
    bool newcomers = false;
    for (int i = 0; i < n; ++i) {
      auto* c = static_cast<Connection*>(events[static_cast<size_t>(i)].data.ptr);
      if (c == nullptr) {
        newcomers = true;
        continue;
      }
      if (c->fd < 0) continue;  // closed already in this batch
      Refusal why;
      if (readFrom(*c, (events[static_cast<size_t>(i)].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0, why)) continue;
      if (why.kind.empty()) {
        closeConnection(*c);
      } else {
        refuse(*c, why, now, err);
      }
    }
    // Newcomers after what the connections sent: a proof that came in this batch is read
    // before its connection could be closed, as the oldest unproven, to make room.
    if (newcomers) accept(now, err);
    closeSilent(now, err);
    refusals_.tick(now, err);
    std::erase_if(connections_, [](const std::unique_ptr<Connection>& c) { return c->fd < 0; });
    if (n > 0) std::this_thread::sleep_for(std::min<Clock::duration>(kBatch, until - Clock::now()));
  }
}

// The peer hears why (a rank with another job's key can say so rather than "Broken pipe");
// what it still had in flight is read and dropped first, so that the close is a FIN after
// the words, not a reset that could discard them.
void CollectServer::refuse(Connection& c, const Refusal& why, Clock::time_point now, std::ostream& err) {
  ++stats_.refused;
  wire::Bytes words;
  collect::appendRefusal(words, why.words);
  send(c.fd, words.data(), words.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  uint8_t discard[16 * 1024];
  for (int i = 0; i < 4 && recv(c.fd, discard, sizeof discard, MSG_DONTWAIT) > 0; ++i) {
  }
  refusals_.note(why.kind, why.words, c.peer, c.address, now, err);
  closeConnection(c);
}

void CollectServer::forgetUnproven(Connection& c) {
  c.counted_unproven = false;
  --unproven_;
  if (const auto count = unproven_by_address_.find(c.address); count != unproven_by_address_.end() && --count->second == 0)
    unproven_by_address_.erase(count);
}

void CollectServer::closeConnection(Connection& c) {
  if (c.counted_unproven) forgetUnproven(c);
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd, nullptr);
  close(c.fd);
  c.fd = -1;
}

}  // namespace commtrace::tools
