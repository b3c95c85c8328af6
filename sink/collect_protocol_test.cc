// The live link's messages: whole payloads out however the bytes arrive, and nothing out of a
// stream signed with another key, replayed onto another connection, reordered, cut or flipped.
#include "sink/collect_protocol.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace commtrace::collect {
namespace {

const LinkKey kKey = keyFromToken("job-secret");
constexpr Challenge kChallenge = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

std::vector<wire::Bytes> payloads() {
  std::vector<wire::Bytes> out;
  std::mt19937 rng(3);
  for (size_t n : {0, 1, 17, 4096, 70000}) {
    wire::Bytes p(n);
    for (uint8_t& b : p) b = static_cast<uint8_t>(rng());
    out.push_back(p);
  }
  return out;
}

wire::Bytes stream(const LinkKey& key, const Challenge& challenge, const std::vector<wire::Bytes>& messages) {
  wire::Bytes out;
  for (size_t i = 0; i < messages.size(); ++i) appendMessage(out, key, challenge, i, messages[i]);
  return out;
}

// Feeds `bytes` in pieces of `piece` bytes and collects the payloads read.
std::vector<wire::Bytes> readAll(const wire::Bytes& bytes, size_t piece, MessageReader& reader) {
  std::vector<wire::Bytes> got;
  for (size_t at = 0; at < bytes.size(); at += piece) {
    reader.feed(std::span<const uint8_t>(bytes).subspan(at, std::min(piece, bytes.size() - at)));
    for (std::span<const uint8_t> p; reader.next(p);) got.emplace_back(p.begin(), p.end());
  }
  return got;
}

TEST(CollectProtocol, PayloadsComeOutWholeHoweverTheBytesArrive) {
  const std::vector<wire::Bytes> sent = payloads();
  const wire::Bytes bytes = stream(kKey, kChallenge, sent);
  for (size_t piece : {size_t{1}, size_t{7}, size_t{4096}, bytes.size()}) {
    MessageReader reader(kKey, kChallenge);
    EXPECT_EQ(readAll(bytes, piece, reader), sent) << "pieces of " << piece;
    EXPECT_EQ(reader.fault(), "");
  }
}

TEST(CollectProtocol, AnotherKeyAnotherConnectionOrAnotherOrderIsRefused) {
  const std::vector<wire::Bytes> sent = payloads();
  MessageReader other_key(keyFromToken("not-the-secret"), kChallenge);
  EXPECT_TRUE(readAll(stream(kKey, kChallenge, sent), 64, other_key).empty());
  EXPECT_EQ(other_key.fault(), "message not signed with this job's key");

  Challenge replayed = kChallenge;
  replayed[0] ^= 1;  // the stream captured on one connection, played to another
  MessageReader other_connection(kKey, replayed);
  EXPECT_TRUE(readAll(stream(kKey, kChallenge, sent), 64, other_connection).empty());

  wire::Bytes swapped;
  appendMessage(swapped, kKey, kChallenge, 1, sent[1]);
  appendMessage(swapped, kKey, kChallenge, 0, sent[0]);
  MessageReader reordered(kKey, kChallenge);
  EXPECT_TRUE(readAll(swapped, 64, reordered).empty());
  EXPECT_EQ(reordered.fault(), "message out of order");

  EXPECT_EQ(keyFromUniqueId(std::vector<uint8_t>(128, 7)), keyFromUniqueId(std::vector<uint8_t>(128, 7)));
  EXPECT_NE(keyFromUniqueId(std::vector<uint8_t>(128, 7)), keyFromUniqueId(std::vector<uint8_t>(128, 8)));
}

TEST(CollectProtocol, EveryFlippedBitStopsTheStreamAtItsMessage) {
  const std::vector<wire::Bytes> sent = {wire::Bytes(40, 0xAB), wire::Bytes(30, 0xCD)};
  const wire::Bytes bytes = stream(kKey, kChallenge, sent);
  const size_t first_end = kSealedHeaderBytes + 40 + kMacBytes;
  for (size_t bit = 0; bit < bytes.size() * 8; ++bit) {
    wire::Bytes flipped = bytes;
    flipped[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    MessageReader reader(kKey, kChallenge);
    const std::vector<wire::Bytes> got = readAll(flipped, flipped.size(), reader);
    // A flip in the first message's length may leave it waiting for bytes that never come.
    ASSERT_EQ(got.size(), bit / 8 < first_end ? 0u : 1u) << "bit " << bit;
    if (!got.empty()) {
      EXPECT_EQ(got[0], sent[0]);
    }
  }
}

// A peer without the key is found out at its first 48 bytes, before the reader takes a byte of
// the payload it announces: a stranger can make the collector hold no more than that.
TEST(CollectProtocol, NoBytePastTheSealedHeaderIsTakenBeforeThePeerIsProven) {
  wire::Bytes stranger;
  appendMessage(stranger, keyFromToken("not-the-secret"), kChallenge, 0, wire::Bytes(kMaxPayload, 1));
  MessageReader reader(kKey, kChallenge);
  EXPECT_EQ(reader.acceptable(), kSealedHeaderBytes);
  reader.feed(std::span<const uint8_t>(stranger).first(10));
  std::span<const uint8_t> p;
  EXPECT_FALSE(reader.next(p));
  EXPECT_EQ(reader.acceptable(), kSealedHeaderBytes - 10);
  reader.feed(std::span<const uint8_t>(stranger).subspan(10, reader.acceptable()));
  EXPECT_FALSE(reader.next(p));
  EXPECT_EQ(reader.fault(), "message not signed with this job's key") << "found out at the seal, not after a megabyte";
  EXPECT_FALSE(reader.proven());
  EXPECT_EQ(reader.acceptable(), 0u);

  wire::Bytes member;
  appendMessage(member, kKey, kChallenge, 0, wire::Bytes(1000, 2));
  MessageReader proving(kKey, kChallenge);
  proving.feed(std::span<const uint8_t>(member).first(kSealedHeaderBytes));
  EXPECT_FALSE(proving.next(p)) << "the payload has not come yet";
  EXPECT_TRUE(proving.proven());
  EXPECT_EQ(proving.acceptable(), SIZE_MAX);
  proving.feed(std::span<const uint8_t>(member).subspan(kSealedHeaderBytes));
  ASSERT_TRUE(proving.next(p));
  EXPECT_EQ(p.size(), 1000u);
}

// A refused peer is told why in words, which cannot carry a control character into its log.
TEST(CollectProtocol, RefusalRoundTrip) {
  wire::Bytes out;
  appendRefusal(out, "message not signed with this job's key\ncommtrace: forged line");
  std::string reason;
  ASSERT_TRUE(parseRefusal(out, reason));
  EXPECT_EQ(reason, "message not signed with this job's key?commtrace: forged line");
  EXPECT_FALSE(parseRefusal(std::span<const uint8_t>(out).first(out.size() - 1), reason)) << "cut";
  out[0] = 'X';
  EXPECT_FALSE(parseRefusal(out, reason));
  wire::Bytes long_reason;
  appendRefusal(long_reason, std::string(1000, 'a'));
  ASSERT_TRUE(parseRefusal(long_reason, reason));
  EXPECT_EQ(reason.size(), kMaxRefusalText);
}

// The key rank 0 hands its collector on a pipe comes out as it went in; anything but 64 hex
// digits is no key.
TEST(CollectProtocol, KeyHexRoundTrip) {
  char hex[kKeyHexDigits];
  keyToHex(kKey, hex);
  LinkKey back{};
  ASSERT_TRUE(keyFromHex({hex, sizeof hex}, back));
  EXPECT_EQ(back, kKey);
  EXPECT_FALSE(keyFromHex({hex, sizeof hex - 1}, back));
  hex[5] = 'g';
  EXPECT_FALSE(keyFromHex({hex, sizeof hex}, back));
}

TEST(CollectProtocol, GreetingAndGarbage) {
  wire::Bytes greeting;
  appendGreeting(greeting, kChallenge);
  Challenge read{};
  ASSERT_TRUE(parseGreeting(greeting, read));
  EXPECT_EQ(read, kChallenge);
  greeting[0] = 'X';
  EXPECT_FALSE(parseGreeting(greeting, read));

  MessageReader garbage(kKey, kChallenge);
  const std::string http = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
  garbage.feed({reinterpret_cast<const uint8_t*>(http.data()), http.size()});
  std::span<const uint8_t> p;
  EXPECT_FALSE(garbage.next(p));
  EXPECT_EQ(garbage.fault(), "not a commtrace digest");

  wire::Bytes huge(kHeaderBytes, 0);
  std::copy(kMagic, kMagic + 4, huge.begin());
  huge[7] = 0x7F;  // a length of about 2 GB: refused before a byte of it is buffered
  MessageReader oversize(kKey, kChallenge);
  oversize.feed(huge);
  EXPECT_FALSE(oversize.next(p));
  EXPECT_NE(oversize.fault().find("above the limit"), std::string::npos);
}

}  // namespace
}  // namespace commtrace::collect
