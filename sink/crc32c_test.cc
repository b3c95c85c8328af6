// CRC-32C on whatever CPU runs it: the published check value, and the CPU's instructions
// (SSE4.2, AArch64 CRC32) against the table for every length and alignment up to 64 bytes
// and a running CRC. No GoogleTest: the same program runs natively and, cross-compiled,
// under qemu-aarch64 (bash .ci/run's aarch64 step).
#include <cstdio>
#include <cstring>
#include <vector>

#include "sink/crc32c.h"

int main() {
  int passed = 0, failed = 0;
  auto check = [&](bool ok, const char* what, size_t a, size_t b) {
    if (ok) {
      ++passed;
    } else {
      ++failed;
      std::printf("FAILED: %s (%zu, %zu)\n", what, a, b);
    }
  };
  const char* digits = "123456789";
  check(commtrace::crc32c(digits, 9) == 0xE3069283u, "crc32c(\"123456789\") is the check value 0xE3069283", 9, 0);
  check(commtrace::crc32cPortable(digits, 9) == 0xE3069283u, "the table gives the check value", 9, 0);
  std::vector<unsigned char> bytes(128);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<unsigned char>(i * 37 + 11);
  for (size_t offset = 0; offset < 8; ++offset) {
    for (size_t n = 0; n <= 64; ++n) {
      const unsigned char* p = bytes.data() + offset;
      check(commtrace::crc32c(p, n) == commtrace::crc32cPortable(p, n), "instructions agree with the table", offset, n);
    }
  }
  const uint32_t whole = commtrace::crc32c(bytes.data(), 100);
  check(commtrace::crc32c(bytes.data() + 37, 63, commtrace::crc32c(bytes.data(), 37)) == whole, "a running CRC continues",
        37, 63);
  std::printf("crc32c: %d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
