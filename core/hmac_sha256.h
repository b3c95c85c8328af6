// SHA-256 and HMAC-SHA256 (FIPS 180-4, RFC 2104), for authenticating the live digests a job's
// processes send to its collector. Written here rather than linked: libcommtrace.so pulls in
// no shared library beyond libc/libm/libgcc_s/libstdc++ (DESIGN.md), and linking a crypto
// library into it statically for two functions would bring its size and its security updates
// into every process of every job. Checked against the published test vectors
// (hmac_sha256_test.cc). Not for the hot path; no allocation. Where the CPU has the SHA
// extensions (x86: Intel since Goldmont/Ice Lake, AMD since Zen) blocks are compressed with
// them, about five times faster: the collector verifies a thousand digests a second.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace commtrace {

using Sha256Digest = std::array<uint8_t, 32>;

class Sha256 {
 public:
  // kBest: the SHA extensions where the CPU has them, else portable C++ (which tests also pick).
  enum class Engine { kBest, kPortable };
  using Compress = void (*)(uint32_t* state, const uint8_t* blocks, size_t n);

  explicit Sha256(Engine engine = Engine::kBest);
  void update(std::span<const uint8_t> bytes);
  Sha256Digest finish();  // the object is spent afterwards
  static bool hasShaExtensions();

 private:
  Compress compress_;
  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

Sha256Digest sha256(std::span<const uint8_t> bytes);

// A key made ready for HMAC-SHA256: its two padded blocks hashed once, not per message.
class HmacKey {
 public:
  explicit HmacKey(std::span<const uint8_t> key);
  // HMAC-SHA256 over the concatenation of `parts` (no copy of them is made).
  Sha256Digest mac(std::initializer_list<std::span<const uint8_t>> parts) const;

 private:
  Sha256 inner_, outer_;  // after the key's ipad and opad blocks
};

inline Sha256Digest hmacSha256(std::span<const uint8_t> key, std::initializer_list<std::span<const uint8_t>> parts) {
  return HmacKey(key).mac(parts);
}

// Compares in time independent of where they differ.
bool digestsEqual(const Sha256Digest& a, const Sha256Digest& b);

}  // namespace commtrace
