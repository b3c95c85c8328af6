#pragma once

#include <cstddef>
#include <cstdint>

namespace commtrace {

// CRC-32C (Castagnoli), as used by iSCSI, ext4 and LevelDB. The CPU's instructions when
// it has them (x86-64 SSE4.2, AArch64 CRC32), a table otherwise. crc32c(data, n,
// crc32c(a, m)) continues a running CRC.
uint32_t crc32c(const void* data, size_t n, uint32_t crc = 0);

// The table, whatever the CPU: what the instructions must agree with.
uint32_t crc32cPortable(const void* data, size_t n, uint32_t crc = 0);

}  // namespace commtrace
