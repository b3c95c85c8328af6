#include "sink/crc32c.h"

#include <array>
#include <cstring>

#if defined(__aarch64__)
#include <arm_acle.h>
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace commtrace {
namespace {

constexpr uint32_t kPolynomial = 0x82F63B78;  // reflected Castagnoli

constexpr std::array<uint32_t, 256> makeTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPolynomial : c >> 1;
    table[i] = c;
  }
  return table;
}
constexpr auto kTable = makeTable();

uint32_t crcTable(const uint8_t* p, size_t n, uint32_t crc) {
  for (size_t i = 0; i < n; ++i) crc = kTable[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
  return crc;
}

// The CPU's CRC-32C instructions, 8 bytes at a time: SSE4.2 on x86-64, the CRC32
// extension on AArch64 (ARMv8.1 makes it mandatory; Grace has it). Each is compiled for
// its extension alone and called only after the CPU said it has it.
#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t crcHardware(const uint8_t* p, size_t n, uint32_t crc) {
  uint64_t c = crc;
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    c = __builtin_ia32_crc32di(c, word);
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  for (; n > 0; --n, ++p) c32 = __builtin_ia32_crc32qi(c32, *p);
  return c32;
}
bool cpuHasCrc() { return __builtin_cpu_supports("sse4.2"); }
#elif defined(__aarch64__)
__attribute__((target("+crc"))) uint32_t crcHardware(const uint8_t* p, size_t n, uint32_t crc) {
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    crc = __crc32cd(crc, word);
  }
  for (; n > 0; --n, ++p) crc = __crc32cb(crc, *p);
  return crc;
}
bool cpuHasCrc() { return (getauxval(AT_HWCAP) & HWCAP_CRC32) != 0; }
#else
uint32_t crcHardware(const uint8_t* p, size_t n, uint32_t crc) { return crcTable(p, n, crc); }
bool cpuHasCrc() { return false; }
#endif

}  // namespace

uint32_t crc32c(const void* data, size_t n, uint32_t crc) {
  static const bool hardware = cpuHasCrc();
  const auto* p = static_cast<const uint8_t*>(data);
  crc = ~crc;
  crc = hardware ? crcHardware(p, n, crc) : crcTable(p, n, crc);
  return ~crc;
}

uint32_t crc32cPortable(const void* data, size_t n, uint32_t crc) {
  return ~crcTable(static_cast<const uint8_t*>(data), n, ~crc);
}

}  // namespace commtrace
