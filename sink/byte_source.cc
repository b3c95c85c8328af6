#include "sink/byte_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace commtrace {

bool FileBytes::open(const std::string& path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st{};
  if (fd_ < 0 || fstat(fd_, &st) != 0) return false;
  if (S_ISREG(st.st_mode)) return true;
  errno = EINVAL;
  return false;
}

FileBytes::~FileBytes() {
  if (fd_ >= 0) close(fd_);
}

bool FileBytes::size(uint64_t& bytes) {
  struct stat st{};
  if (fd_ < 0 || fstat(fd_, &st) != 0) return false;
  bytes = static_cast<uint64_t>(st.st_size);
  return true;
}

bool FileBytes::readAt(uint64_t offset, void* buffer, size_t n) {
  auto* p = static_cast<uint8_t*>(buffer);
  while (n > 0) {
    const ssize_t got = pread(fd_, p, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    p += got;
    n -= static_cast<size_t>(got);
    offset += static_cast<uint64_t>(got);
  }
  return true;
}

bool StreamBytes::readAt(uint64_t offset, void* buffer, size_t n) {
  if (offset < base_ || offset - base_ > data_.size() || n > data_.size() - (offset - base_)) return false;
  std::memcpy(buffer, data_.data() + (offset - base_), n);
  return true;
}

// Everything read: the buffer empties and keeps its capacity (a digest a second reuses it).
// Otherwise the front goes once it is at least half of what is held, so that releasing
// costs amortised O(1) per byte.
void StreamBytes::release(uint64_t offset) {
  if (offset <= base_) return;
  const size_t drop = static_cast<size_t>(std::min<uint64_t>(offset - base_, data_.size()));
  if (drop == data_.size()) {
    data_.clear();
  } else if (drop * 2 >= data_.size()) {
    data_.erase(data_.begin(), data_.begin() + static_cast<std::ptrdiff_t>(drop));
  } else {
    return;
  }
  base_ += drop;
}

}  // namespace commtrace
