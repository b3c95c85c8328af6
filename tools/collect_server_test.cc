// The collector's network side with the library's sender, in one process: what a process
// sends over two connections is one stream in memory, and the spool file, that is the very
// trace file it would have written; a sender with another key leaves nothing behind but one
// line; peers that make the collector hold too much unverified are cut off.
#include "tools/collect_server.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <sys/socket.h>
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
  explicit RunningServer(const std::string& spool, size_t max_unverified_bytes = 16u << 20)
      : server_({.host = "127.0.0.1", .key = kKey, .spool_dir = spool, .max_unverified_bytes = max_unverified_bytes}) {
    EXPECT_TRUE(server_.start(err_)) << err_.str();
    thread_ = std::thread([this] {
      while (!stop_) server_.serveFor(0.02, err_);
    });
  }
  ~RunningServer() { stopServing(); }
  void stopServing() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  uint16_t port() const { return server_.port(); }
  CollectServer& server() { return server_; }
  std::string err() const { return err_.str(); }

 private:
  CollectServer server_;
  std::ostringstream err_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

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
  sender.setKey(collect::keyFromToken("another-job"), nowNs());
  for (int tries = 0; !sender.ready() && tries < 2000; ++tries) {
    sender.pump(nowNs());
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(sender.offer(trace.bytes, nowNs()));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  server.stopServing();
  EXPECT_EQ(server.server().stats().refused, 1u);
  EXPECT_EQ(server.server().stats().messages, 0u);
  EXPECT_TRUE(testing::traceFilesIn(dir.path()).empty());
  EXPECT_NE(server.err().find("commtrace: collector: refused 127.0.0.1:"), std::string::npos) << server.err();
  EXPECT_NE(server.err().find(": message not signed with this job's key"), std::string::npos) << server.err();
}

// A raw peer that announces a message of the largest size and sends most of it: the
// collector holds that much unverified until the MAC can be checked.
int holdUnverified(uint16_t port, size_t bytes) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{.sin_family = AF_INET, .sin_port = htons(port), .sin_addr = {htonl(INADDR_LOOPBACK)}, .sin_zero = {}};
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  std::vector<uint8_t> message(collect::kHeaderBytes + bytes);
  std::memcpy(message.data(), collect::kMagic, 4);
  const uint32_t length = collect::kMaxPayload;
  std::memcpy(message.data() + 4, &length, 4);  // little-endian host
  EXPECT_EQ(send(fd, message.data(), message.size(), MSG_NOSIGNAL), static_cast<ssize_t>(message.size()));
  return fd;
}

TEST(CollectServer, PeersHoldingTooMuchUnverifiedAreCutOff) {
  testutil::TempDir dir;
  RunningServer server(dir.path(), /*max_unverified_bytes=*/1u << 20);
  const int first = holdUnverified(server.port(), 600'000);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const int second = holdUnverified(server.port(), 600'000);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  server.stopServing();
  EXPECT_EQ(server.server().stats().refused, 1u) << "the second peer took the total past the limit";
  EXPECT_EQ(server.server().openConnections(), 1u);
  EXPECT_LE(server.server().unverifiedBytes(), 1u << 20);
  EXPECT_GE(server.server().unverifiedBytes(), 600'000u) << "the first peer's bytes still wait for their MAC";
  EXPECT_NE(server.err().find("MiB of unverified messages, its limit"), std::string::npos) << server.err();
  close(first);
  close(second);
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
