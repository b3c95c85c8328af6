// The collector's network side with the library's sender, in one process: what a process
// sends over two connections is one stream in memory, and the spool file, that is the very
// trace file it would have written; a sender with another key leaves nothing behind but one
// line, and hears why; strangers (garbage, silence, floods, descriptors run out) cannot keep
// the job's processes out nor fill the log.
#include "tools/collect_server.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/clock.h"
#include "sink/digest_sender.h"
#include "tests/support/sink_test_support.h"
#include "tests/support/temp_dir.h"

namespace commtrace::tools {
namespace {

const collect::LinkKey kKey = collect::keyFromToken("job-token");

// The server served on its own thread while the test sends.
class RunningServer {
 public:
  explicit RunningServer(const std::string& spool, CollectServer::Options options = {})
      : server_(withDefaults(spool, std::move(options))) {
    EXPECT_TRUE(server_.start(err_)) << err_.str();
    thread_ = std::thread([this] {
      while (!stop_) {
        server_.serveFor(0.02, err_);
        messages_ = server_.stats().messages;
      }
    });
  }
  ~RunningServer() { stopServing(); }
  void stopServing() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  uint16_t port() const { return server_.port(); }
  CollectServer& server() { return server_; }  // its stats and streams: after stopServing()
  uint64_t messagesSoFar() const { return messages_; }  // while it serves
  std::string err() const { return err_.str(); }

 private:
  static CollectServer::Options withDefaults(const std::string& spool, CollectServer::Options options) {
    options.host = "127.0.0.1";
    options.key = kKey;
    options.spool_dir = spool;
    return options;
  }

  CollectServer server_;
  std::ostringstream err_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> messages_{0};
  std::thread thread_;
};

// Keys the sender and pumps it until the collector has greeted it (a few ms on loopback).
bool connectWith(DigestSender& sender, const collect::LinkKey& key) {
  sender.setKey(key, nowNs());
  for (int tries = 0; !sender.ready() && tries < 2000; ++tries) {
    sender.pump(nowNs());
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return sender.ready();
}

// Offers each message once the sender is connected (a few ms on loopback); false if it never was.
bool sendAll(DigestSender& sender, const std::vector<std::vector<uint8_t>>& messages) {
  sender.setKey(kKey, nowNs());
  for (const auto& m : messages) {
    for (int tries = 0; !sender.ready() && tries < 2000; ++tries) {
      sender.pump(nowNs());
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (!sender.offer(m, nowNs())) return false;
  }
  return true;
}

// A trace file of `chunks` chunks of `per_chunk` random records each (rank 7's).
testing::BuiltTrace randomTrace(uint64_t seed, size_t chunks, int per_chunk) {
  testing::SlotGenerator gen(seed);
  std::vector<std::vector<RecordSlot>> records(chunks);
  for (auto& c : records)
    for (int i = 0; i < per_chunk; ++i) c.push_back(gen.make(gen.anyKind(), 7));
  return testing::buildTrace(records);
}

std::vector<uint8_t> slice(const std::vector<uint8_t>& bytes, uint64_t from, uint64_t to) {
  return {bytes.begin() + static_cast<ptrdiff_t>(from), bytes.begin() + static_cast<ptrdiff_t>(to)};
}

std::vector<uint8_t> concat(std::vector<uint8_t> a, const std::vector<uint8_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::vector<uint8_t> bytesOf(ByteSource& source) {
  uint64_t size = 0;
  EXPECT_TRUE(source.size(size));
  std::vector<uint8_t> bytes(size);
  EXPECT_TRUE(source.readAt(0, bytes.data(), bytes.size()));
  return bytes;
}

TEST(CollectServer, TwoConnectionsOfOneProcessMakeItsTraceFileExactly) {
  testutil::TempDir dir;
  const testing::BuiltTrace trace = randomTrace(21, 4, 50);
  const std::vector<uint8_t> header = slice(trace.bytes, 0, trace.header_end);
  const auto chunk = [&](size_t i) { return slice(trace.bytes, trace.chunk_begin[i], trace.chunk_end[i]); };
  {
    RunningServer server(dir.path());
    {  // the process's first connection, cut after two chunks (its collector restarted, say)
      DigestSender first({.host = "127.0.0.1", .port = server.port()});
      ASSERT_TRUE(sendAll(first, {concat(header, chunk(0)), chunk(1)}));
    }
    {  // the reconnection starts with the header again, as every new connection does
      DigestSender second({.host = "127.0.0.1", .port = server.port()});
      ASSERT_TRUE(sendAll(second, {concat(header, chunk(2)), chunk(3)}));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    server.stopServing();
    EXPECT_EQ(server.server().stats().accepted, 2u);
    EXPECT_EQ(server.server().stats().refused, 0u) << server.err();
    EXPECT_EQ(server.server().stats().messages, 4u);
    const std::vector<CollectServer::Stream> streams = server.server().takeNewStreams();
    ASSERT_EQ(streams.size(), 1u) << "one process, however many connections";
    EXPECT_EQ(bytesOf(*streams[0].bytes), trace.bytes) << "the stream in memory is the file the process would have written";
    EXPECT_TRUE(server.server().takeNewStreams().empty());
  }
  const std::vector<std::string> files = testing::traceFilesIn(dir.path());
  ASSERT_EQ(files.size(), 1u);
  EXPECT_NE(files[0].find("testhost-pid4242-"), std::string::npos) << files[0];
  std::ifstream in(files[0], std::ios::binary);
  const std::vector<uint8_t> spooled((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(spooled, trace.bytes) << "the spool is the file the process would have written";
}

// A collector restarted on the same spool continues a process's file as its stream: the file
// is still the one the process would have written, with one header.
TEST(CollectServer, ACollectorRestartedOnTheSameSpoolContinuesTheFile) {
  testutil::TempDir dir;
  const testing::BuiltTrace trace = randomTrace(22, 2, 20);
  const std::vector<uint8_t> header = slice(trace.bytes, 0, trace.header_end);
  for (size_t i = 0; i < 2; ++i) {
    RunningServer server(dir.path());
    DigestSender sender({.host = "127.0.0.1", .port = server.port()});
    ASSERT_TRUE(sendAll(sender, {concat(header, slice(trace.bytes, trace.chunk_begin[i], trace.chunk_end[i]))}));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    server.stopServing();
    EXPECT_EQ(server.server().stats().messages, 1u) << server.err();
  }
  const std::vector<std::string> files = testing::traceFilesIn(dir.path());
  ASSERT_EQ(files.size(), 1u);
  std::ifstream in(files[0], std::ios::binary);
  EXPECT_EQ(std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()), trace.bytes);
}

TEST(CollectServer, ASenderWithAnotherKeyLeavesNothingButOneLine) {
  testutil::TempDir dir;
  RunningServer server(dir.path());
  const testing::BuiltTrace trace = testing::buildTrace({{}});
  DigestSender sender({.host = "127.0.0.1", .port = server.port()});
  ASSERT_TRUE(connectWith(sender, collect::keyFromToken("another-job")));
  ASSERT_TRUE(sender.offer(trace.bytes, nowNs()));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  server.stopServing();
  EXPECT_EQ(server.server().stats().refused, 1u);
  EXPECT_EQ(server.server().stats().messages, 0u);
  EXPECT_TRUE(testing::traceFilesIn(dir.path()).empty());
  EXPECT_NE(server.err().find("commtrace: collector: refused 127.0.0.1:"), std::string::npos) << server.err();
  EXPECT_NE(server.err().find(": message not signed with this job's key"), std::string::npos) << server.err();
}

// The process with another job's key names the refusal, not "Broken pipe".
TEST(CollectServer, ASenderWithAnotherKeySaysItWasRefusedAndWhy) {
  testutil::TempDir dir;
  RunningServer server(dir.path());
  const testing::BuiltTrace trace = testing::buildTrace({{}});
  DigestSender sender({.host = "127.0.0.1", .port = server.port()});
  ASSERT_TRUE(connectWith(sender, collect::keyFromToken("another-job")));
  ::testing::internal::CaptureStderr();
  ASSERT_TRUE(sender.offer(trace.bytes, nowNs()));
  for (int i = 0; i < 100 && sender.ready(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    sender.pump(nowNs());
  }
  const std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(sender.ready());
  EXPECT_NE(said.find("commtrace: live collector at 127.0.0.1:" + std::to_string(server.port()) +
                      " refused this process: message not signed with this job's key"),
            std::string::npos)
      << said;
  EXPECT_EQ(said.find("Broken pipe"), std::string::npos) << said;
}

// A raw peer from `source` (another loopback address: another host, to the collector) that
// sends `bytes` and stays connected.
int connectFrom(const char* source, uint16_t port, const std::vector<uint8_t>& bytes = {}) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in from{.sin_family = AF_INET, .sin_port = 0, .sin_addr = {}, .sin_zero = {}};
  inet_pton(AF_INET, source, &from.sin_addr);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from), 0);
  sockaddr_in addr{.sin_family = AF_INET, .sin_port = htons(port), .sin_addr = {htonl(INADDR_LOOPBACK)}, .sin_zero = {}};
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  if (!bytes.empty()) send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  return fd;
}

// The header of a message of the largest size, its seal only begun: what a stranger sends to
// make the collector wait for a megabyte it would have to hold.
std::vector<uint8_t> announcedMegabyte() {
  std::vector<uint8_t> message(collect::kHeaderBytes + 20, 0x5A);
  std::memcpy(message.data(), collect::kMagic, 4);
  const uint32_t length = collect::kMaxPayload;
  std::memcpy(message.data() + 4, &length, 4);  // little-endian host
  std::memset(message.data() + 8, 0, 8);
  return message;
}

// A process's header message sent from 127.0.0.1 through the library's sender; whether the
// collector took it.
bool aProcessGetsThrough(RunningServer& server) {
  const testing::BuiltTrace trace = testing::buildTrace({{}});
  const uint64_t before = server.messagesSoFar();
  DigestSender sender({.host = "127.0.0.1", .port = server.port()});
  if (!sendAll(sender, {trace.bytes})) return false;
  for (int i = 0; i < 200 && server.messagesSoFar() == before; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return server.messagesSoFar() > before;
}

std::vector<int> connectMany(int n, const char* source, uint16_t port, const std::vector<uint8_t>& bytes = {}) {
  std::vector<int> fds;
  for (int i = 0; i < n; ++i) fds.push_back(connectFrom(source, port, bytes));
  return fds;
}

void closeAll(const std::vector<int>& fds) {
  for (int fd : fds) close(fd);
}

// 17 strangers each sending a megabyte filled the 16 MiB the collector would hold unverified,
// and the job's own processes were refused. Now each is found out at its 48th byte.
TEST(CollectServer, StrangersSendingMegabytesAreRefusedAtTheirHeaderAndTheJobGetsIn) {
  testutil::TempDir dir;
  RunningServer server(dir.path());
  std::vector<uint8_t> megabyte = announcedMegabyte();
  megabyte.resize(1'000'000, 0x5A);
  const std::vector<int> strangers = connectMany(17, "127.0.0.2", server.port(), megabyte);
  const std::vector<int> waiting = connectMany(17, "127.0.0.3", server.port(), announcedMegabyte());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_TRUE(aProcessGetsThrough(server)) << server.err();
  server.stopServing();
  EXPECT_EQ(server.server().stats().refused, 17u) << server.err();
  EXPECT_LE(server.server().unprovenBytes(), 17 * collect::kSealedHeaderBytes) << "the seals begun are held, nothing more";
  EXPECT_GE(server.server().unprovenBytes(), 17 * (collect::kHeaderBytes + 20));
  closeAll(strangers);
  closeAll(waiting);
}

TEST(CollectServer, APeerWithAWrongSealIsRefusedAtItsHeaderAndTold) {
  testutil::TempDir dir;
  RunningServer server(dir.path());
  std::vector<uint8_t> forged = announcedMegabyte();
  forged.resize(collect::kSealedHeaderBytes + 4096, 0x5A);
  const int fd = connectFrom("127.0.0.2", server.port(), forged);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  uint8_t said[256];
  const ssize_t n = recv(fd, said, sizeof said, 0);  // the greeting, then the refusal
  ASSERT_GT(n, static_cast<ssize_t>(collect::kGreetingBytes));
  std::string reason;
  EXPECT_TRUE(collect::parseRefusal({said + collect::kGreetingBytes, static_cast<size_t>(n) - collect::kGreetingBytes}, reason));
  EXPECT_EQ(reason, "message not signed with this job's key");
  server.stopServing();
  EXPECT_EQ(server.server().stats().refused, 1u);
  close(fd);
}

TEST(CollectServer, SilentConnectionsAreClosedAfterTheHandshakeTime) {
  testutil::TempDir dir;
  RunningServer server(dir.path(), {.handshake_seconds = 0.3, .max_unproven_per_address = 64});
  const std::vector<int> idle = connectMany(50, "127.0.0.2", server.port());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_TRUE(aProcessGetsThrough(server));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  server.stopServing();
  EXPECT_EQ(server.server().stats().refused, 50u) << server.err();
  EXPECT_EQ(server.server().openConnections(), 0u);
  EXPECT_EQ(server.server().refusalLines(), 1u) << "one line for 50 silent strangers in a minute:\n" << server.err();
  EXPECT_NE(server.err().find("no sealed header within the handshake time"), std::string::npos) << server.err();
  closeAll(idle);
}

// A flood from one address closes that address's own oldest unproven connections, not the
// job's: the collector holds max_unproven_per_address from it.
TEST(CollectServer, AFloodFromOneAddressCrowdsOutOnlyItself) {
  testutil::TempDir dir;
  RunningServer server(dir.path(), {.max_unproven = 64, .max_unproven_per_address = 8});
  const std::vector<int> flood = connectMany(300, "127.0.0.2", server.port());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_TRUE(aProcessGetsThrough(server));
  server.stopServing();
  EXPECT_LE(server.server().openConnections(), 9u) << "8 of the flood, and the process's if it is still open";
  EXPECT_GE(server.server().stats().refused, 292u);
  closeAll(flood);
}

// A job's processes connecting at once, more of them than the collector holds unproven: the
// newcomers wait in the listening socket's queue while the earlier prove themselves, and every
// one gets in (the oldest unproven used to be closed for each newcomer: past 1,024 ranks
// connecting together, ranks were refused and lost a minute of live digests).
TEST(CollectServer, AJobsProcessesConnectingAtOnceAllGetIn) {
  testutil::TempDir dir;
  RunningServer server(dir.path(), {.max_unproven = 32, .max_unproven_per_address = 1024});
  std::vector<std::unique_ptr<DigestSender>> ranks;
  for (int i = 0; i < 400; ++i) {
    ranks.push_back(std::make_unique<DigestSender>(DigestSender::Options{.host = "127.0.0.1", .port = server.port(), .quiet = true}));
    ranks.back()->setKey(kKey, nowNs());
  }
  // Each proves itself with its first digest as soon as it is greeted, as a flusher does.
  const testing::BuiltTrace trace = testing::buildTrace({{}});
  std::vector<bool> sent(ranks.size(), false);
  size_t proven = 0;
  for (int tries = 0; tries < 1000 && proven < ranks.size(); ++tries) {
    for (size_t i = 0; i < ranks.size(); ++i) {
      ranks[i]->pump(nowNs());
      if (!sent[i] && ranks[i]->ready()) sent[i] = ranks[i]->offer(trace.bytes, nowNs());
    }
    proven = server.messagesSoFar();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  server.stopServing();
  EXPECT_EQ(server.server().stats().messages, ranks.size()) << server.err();
  EXPECT_EQ(server.server().stats().refused, 0u) << server.err();
  EXPECT_EQ(server.server().stats().accepted, ranks.size());
}

// Out of descriptors, the collector closes its oldest unproven connection for a newcomer
// (before, accept failed with EMFILE forever and every rank was locked out). Served in a
// child whose descriptor limit is 48, soft and hard.
TEST(CollectServer, OutOfDescriptorsTheNewestPeerStillGetsIn) {
  testutil::TempDir dir;
  int to_parent[2];
  ASSERT_EQ(pipe(to_parent), 0);
  const pid_t child = fork();
  if (child == 0) {
    const rlimit low{48, 48};
    setrlimit(RLIMIT_NOFILE, &low);
    CollectServer server({.host = "127.0.0.1", .key = kKey, .spool_dir = dir.path()});
    std::ostringstream err;
    if (!server.start(err)) _exit(2);
    const uint16_t port = server.port();
    (void)!write(to_parent[1], &port, sizeof port);
    server.serveFor(3, err);
    const uint64_t messages = server.stats().messages;
    (void)!write(to_parent[1], &messages, sizeof messages);
    _exit(0);
  }
  uint16_t port = 0;
  ASSERT_EQ(read(to_parent[0], &port, sizeof port), static_cast<ssize_t>(sizeof port));
  const std::vector<int> idle = connectMany(100, "127.0.0.2", port);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const testing::BuiltTrace trace = testing::buildTrace({{}});
  DigestSender sender({.host = "127.0.0.1", .port = port});
  EXPECT_TRUE(sendAll(sender, {trace.bytes}));
  uint64_t messages = 0;
  EXPECT_EQ(read(to_parent[0], &messages, sizeof messages), static_cast<ssize_t>(sizeof messages));
  EXPECT_EQ(messages, 1u) << "the process's header message was taken";
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_EQ(status, 0);
  closeAll(idle);
  close(to_parent[0]);
  close(to_parent[1]);
}

TEST(CollectServer, APortTakenIsSaidPlainly) {
  testutil::TempDir dir;
  RunningServer first(dir.path());
  CollectServer second({.host = "127.0.0.1", .port = first.port(), .key = kKey, .spool_dir = dir.path()});
  std::ostringstream err;
  EXPECT_FALSE(second.start(err));
  EXPECT_NE(err.str().find("cannot listen on 127.0.0.1:" + std::to_string(first.port()) + ": Address already in use (another program has the port"),
            std::string::npos)
      << err.str();
}

}  // namespace
}  // namespace commtrace::tools
