// SHA-256 against FIPS 180-4's examples and HMAC-SHA256 against RFC 4231's test cases.
#include "core/hmac_sha256.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace commtrace {
namespace {

std::span<const uint8_t> bytesOf(const std::string& s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

std::string hex(const Sha256Digest& d) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (uint8_t b : d) out += {digits[b >> 4], digits[b & 15]};
  return out;
}

std::vector<uint8_t> repeated(uint8_t byte, size_t n) { return std::vector<uint8_t>(n, byte); }

TEST(Sha256, FipsExamples) {
  EXPECT_EQ(hex(sha256(bytesOf(""))), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hex(sha256(bytesOf("abc"))), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hex(sha256(bytesOf("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"))),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // A million 'a', fed in uneven pieces: the buffering across blocks.
  Sha256 h;
  const std::vector<uint8_t> a = repeated('a', 1'000'000);
  for (size_t at = 0, piece = 1; at < a.size(); at += piece, piece = piece % 97 + 1)
    h.update(std::span<const uint8_t>(a).subspan(at, std::min(piece, a.size() - at)));
  EXPECT_EQ(hex(h.finish()), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

std::string hexWith(Sha256::Engine engine, std::span<const uint8_t> bytes) {
  Sha256 h(engine);
  h.update(bytes);
  return hex(h.finish());
}

// The portable engine alone on the examples (kBest above used the SHA extensions where the
// CPU has them), and both on every length of three blocks and more (every padding case)
// in pieces of every size.
TEST(Sha256, BothEnginesGiveTheSameDigests) {
  EXPECT_EQ(hexWith(Sha256::Engine::kPortable, bytesOf("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hexWith(Sha256::Engine::kPortable, bytesOf("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  if (!Sha256::hasShaExtensions()) GTEST_SKIP() << "this CPU has no SHA extensions: only the portable engine runs here";
  std::vector<uint8_t> data(300);
  uint32_t x = 12345;
  for (uint8_t& b : data) b = static_cast<uint8_t>((x = x * 1103515245 + 12345) >> 16);
  for (size_t n = 0; n <= data.size(); ++n) {
    const std::span<const uint8_t> bytes(data.data(), n);
    ASSERT_EQ(hexWith(Sha256::Engine::kBest, bytes), hexWith(Sha256::Engine::kPortable, bytes)) << n << " bytes";
    Sha256 pieces;
    for (size_t at = 0, piece = n % 7 + 1; at < n; at += piece) pieces.update(bytes.subspan(at, std::min(piece, n - at)));
    ASSERT_EQ(hex(pieces.finish()), hexWith(Sha256::Engine::kPortable, bytes)) << n << " bytes in pieces";
  }
}

TEST(HmacSha256, Rfc4231TestCases) {
  const std::vector<uint8_t> key1 = repeated(0x0b, 20);
  EXPECT_EQ(hex(hmacSha256(key1, {bytesOf("Hi There")})), "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  EXPECT_EQ(hex(hmacSha256(bytesOf("Jefe"), {bytesOf("what do ya want "), bytesOf("for nothing?")})),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  const std::vector<uint8_t> key3 = repeated(0xaa, 20), data3 = repeated(0xdd, 50);
  EXPECT_EQ(hex(hmacSha256(key3, {data3})), "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
  const std::vector<uint8_t> key6 = repeated(0xaa, 131);  // longer than a block: hashed first
  EXPECT_EQ(hex(hmacSha256(key6, {bytesOf("Test Using Larger Than Block-Size Key - Hash Key First")})),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST(HmacSha256, AKeyMadeReadyOnceGivesTheSameMacs) {
  const HmacKey key(bytesOf("Jefe"));
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(hex(key.mac({bytesOf("what do ya want "), bytesOf("for nothing?")})), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(HmacSha256, EqualityLooksAtEveryByte) {
  Sha256Digest a{}, b{};
  EXPECT_TRUE(digestsEqual(a, b));
  b[31] = 1;
  EXPECT_FALSE(digestsEqual(a, b));
}

}  // namespace
}  // namespace commtrace
