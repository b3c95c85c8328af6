#include "core/hmac_sha256.h"

#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace commtrace {
namespace {

constexpr std::array<uint32_t, 64> kRound = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01,
    0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc,
    0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
    0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08,
    0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
    0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

constexpr uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

constexpr size_t kBlock = 64;

void compressPortable(uint32_t* state, const uint8_t* blocks, size_t n) {
  for (const uint8_t* p = blocks; p != blocks + n * kBlock; p += kBlock) {
    std::array<uint32_t, 64> w;
    for (int i = 0; i < 16; ++i) w[i] = uint32_t{p[4 * i]} << 24 | uint32_t{p[4 * i + 1]} << 16 | uint32_t{p[4 * i + 2]} << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; ++i) {
      const uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      const uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = state[0], b = state[1], c = state[2], d = state[3], e = state[4], f = state[5], g = state[6], h = state[7];
    for (int i = 0; i < 64; ++i) {
      const uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + kRound[i] + w[i];
      const uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      h = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
    }
    const uint32_t add[8] = {a, b, c, d, e, f, g, h};
    for (int i = 0; i < 8; ++i) state[i] += add[i];
  }
}

#if defined(__x86_64__)
// The SHA extensions keep the state as two vectors, ABEF and CDGH (lane 3 first: A in the
// top lane), take four words of the schedule plus constants per two-round instruction pair,
// and compute the schedule four words at a time: X[k] = msg2(msg1(X[k-4], X[k-3]) +
// W[4k-7 .. 4k-4], X[k-1]), where W[4k-7 .. 4k-4] straddles X[k-2] and X[k-1].
__attribute__((target("sha,sse4.1,ssse3"))) void compressShaNi(uint32_t* state, const uint8_t* blocks, size_t n) {
  const __m128i byte_swap = _mm_set_epi64x(0x0c0d0e0f08090a0bll, 0x0405060700010203ll);
  const __m128i dcba = _mm_shuffle_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(state)), 0xB1);  // CDAB
  const __m128i efgh = _mm_shuffle_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(state + 4)), 0x1B);
  __m128i abef = _mm_alignr_epi8(dcba, efgh, 8);
  __m128i cdgh = _mm_blend_epi16(efgh, dcba, 0xF0);
  for (const uint8_t* p = blocks; p != blocks + n * kBlock; p += kBlock) {
    const __m128i abef_before = abef, cdgh_before = cdgh;
    __m128i x[4];
    for (int k = 0; k < 16; ++k) {
      __m128i& w = x[k % 4];
      if (k < 4) {
        w = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k)), byte_swap);
      } else {
        const __m128i& prev = x[(k + 3) % 4];
        w = _mm_sha256msg2_epu32(_mm_add_epi32(_mm_sha256msg1_epu32(w, x[(k + 1) % 4]), _mm_alignr_epi8(prev, x[(k + 2) % 4], 4)), prev);
      }
      const __m128i wk = _mm_add_epi32(w, _mm_loadu_si128(reinterpret_cast<const __m128i*>(kRound.data() + 4 * k)));
      // Two rounds leave the new ABEF in cdgh; the ABEF before them is the CDGH of the next two.
      cdgh = _mm_sha256rnds2_epu32(cdgh, abef, wk);
      abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(wk, 0x0E));
    }
    abef = _mm_add_epi32(abef, abef_before);
    cdgh = _mm_add_epi32(cdgh, cdgh_before);
  }
  const __m128i feba = _mm_shuffle_epi32(abef, 0x1B);
  const __m128i dchg = _mm_shuffle_epi32(cdgh, 0xB1);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(state), _mm_blend_epi16(feba, dchg, 0xF0));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(state + 4), _mm_alignr_epi8(dchg, feba, 8));
}

bool cpuHasShaNi() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return false;
  const bool sse41 = (ecx & bit_SSE4_1) != 0, ssse3 = (ecx & bit_SSSE3) != 0;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return false;
  return sse41 && ssse3 && (ebx & bit_SHA) != 0;
}
#endif

Sha256::Compress bestCompress() {
#if defined(__x86_64__)
  if (Sha256::hasShaExtensions()) return compressShaNi;
#endif
  return compressPortable;
}

}  // namespace

bool Sha256::hasShaExtensions() {
#if defined(__x86_64__)
  static const bool has = cpuHasShaNi();
  return has;
#else
  return false;
#endif
}

Sha256::Sha256(Engine engine)
    : compress_(engine == Engine::kBest ? bestCompress() : compressPortable),
      state_{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19} {}

void Sha256::update(std::span<const uint8_t> bytes) {
  if (bytes.empty()) return;  // an empty span's data() may be null, which memcpy must not see
  total_bytes_ += bytes.size();
  size_t at = 0;
  if (buffered_ > 0) {
    const size_t take = std::min(kBlock - buffered_, bytes.size());
    std::memcpy(buffer_.data() + buffered_, bytes.data(), take);
    buffered_ += take;
    at = take;
    if (buffered_ < kBlock) return;
    compress_(state_.data(), buffer_.data(), 1);
    buffered_ = 0;
  }
  const size_t whole = (bytes.size() - at) / kBlock;
  compress_(state_.data(), bytes.data() + at, whole);
  at += whole * kBlock;
  std::memcpy(buffer_.data(), bytes.data() + at, bytes.size() - at);
  buffered_ = bytes.size() - at;
}

Sha256Digest Sha256::finish() {
  const uint64_t bits = total_bytes_ * 8;
  // 0x80, zeros up to 8 bytes short of a block's end (the next block's if too few are left), the length.
  std::array<uint8_t, 2 * kBlock> padding{};
  padding[0] = 0x80;
  const size_t zeros = (kBlock + kBlock - 8 - buffered_ - 1) % kBlock;
  for (int i = 0; i < 8; ++i) padding[1 + zeros + i] = static_cast<uint8_t>(bits >> (56 - 8 * i));
  update({padding.data(), 1 + zeros + 8});
  Sha256Digest out;
  for (int i = 0; i < 8; ++i)
    for (int k = 0; k < 4; ++k) out[4 * i + k] = static_cast<uint8_t>(state_[i] >> (24 - 8 * k));
  return out;
}

Sha256Digest sha256(std::span<const uint8_t> bytes) {
  Sha256 h;
  h.update(bytes);
  return h.finish();
}

HmacKey::HmacKey(std::span<const uint8_t> key) {
  std::array<uint8_t, kBlock> block_key{};
  if (key.size() > kBlock) {
    const Sha256Digest hashed = sha256(key);
    std::memcpy(block_key.data(), hashed.data(), hashed.size());
  } else if (!key.empty()) {
    std::memcpy(block_key.data(), key.data(), key.size());
  }
  std::array<uint8_t, kBlock> pad;
  for (size_t i = 0; i < kBlock; ++i) pad[i] = block_key[i] ^ 0x36;
  inner_.update(pad);
  for (size_t i = 0; i < kBlock; ++i) pad[i] = block_key[i] ^ 0x5c;
  outer_.update(pad);
}

Sha256Digest HmacKey::mac(std::initializer_list<std::span<const uint8_t>> parts) const {
  Sha256 inner = inner_;
  for (std::span<const uint8_t> part : parts) inner.update(part);
  Sha256 outer = outer_;
  outer.update(inner.finish());
  return outer.finish();
}

bool digestsEqual(const Sha256Digest& a, const Sha256Digest& b) {
  uint8_t differ = 0;
  for (size_t i = 0; i < a.size(); ++i) differ |= static_cast<uint8_t>(a[i] ^ b[i]);
  return differ == 0;
}

}  // namespace commtrace
