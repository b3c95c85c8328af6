#pragma once

#include <cstddef>
#include <cstdint>

namespace commtrace {

// CRC-32C (Castagnoli), as used by iSCSI, ext4 and LevelDB. Hardware crc32 when the CPU
// has SSE4.2, a table otherwise. crc32c(data, n, crc32c(a, m)) continues a running CRC.
uint32_t crc32c(const void* data, size_t n, uint32_t crc = 0);

}  // namespace commtrace
