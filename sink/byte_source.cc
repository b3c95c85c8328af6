#include "sink/byte_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace commtrace {

bool DescriptorPool::hold(FileBytes& f) {
  if (f.held_) {
    held_.splice(held_.end(), held_, f.held_at_);
    return true;
  }
  makeRoom();
  if (f.fd_ < 0 && !f.reopen()) return false;  // else just opened by open()
  f.held_at_ = held_.insert(held_.end(), &f);
  f.held_ = true;
  return true;
}

void DescriptorPool::makeRoom() {
  while (held_.size() >= budget_) {
    FileBytes& least = *held_.front();
    close(least.fd_);
    least.fd_ = -1;
    least.held_ = false;
    held_.pop_front();
  }
}

void DescriptorPool::drop(FileBytes& f) {
  if (!f.held_) return;
  held_.erase(f.held_at_);
  f.held_ = false;
}

bool FileBytes::open(const std::string& path, DescriptorPool* pool) {
  std::unique_lock<std::mutex> lock;
  if (pool != nullptr) {  // room first: never more descriptors than the budget, even while opening
    lock = std::unique_lock(pool->mutex_);
    pool->makeRoom();
  }
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st{};
  if (fd_ < 0 || fstat(fd_, &st) != 0) return false;
  if (!S_ISREG(st.st_mode)) {
    errno = EINVAL;
    return false;
  }
  if (pool == nullptr) return true;
  // Known by path and inode from now on; the descriptor the pool's to close and reopen.
  path_ = path;
  device_ = st.st_dev;
  inode_ = st.st_ino;
  pool_ = pool;
  return pool->hold(*this);
}

bool FileBytes::reopen() {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) return false;
  struct stat st{};
  if (fstat(fd_, &st) == 0 && st.st_dev == device_ && st.st_ino == inode_) return true;
  close(fd_);
  fd_ = -1;
  errno = ESTALE;  // replaced since it was first opened
  return false;
}

FileBytes::~FileBytes() {
  if (pool_ != nullptr) {
    std::lock_guard lock(pool_->mutex_);
    pool_->drop(*this);
  }
  if (fd_ >= 0) close(fd_);
}

bool FileBytes::size(uint64_t& bytes) {
  if (pool_ == nullptr) return sizeOpen(bytes);
  std::lock_guard lock(pool_->mutex_);
  return pool_->hold(*this) && sizeOpen(bytes);
}

bool FileBytes::readAt(uint64_t offset, void* buffer, size_t n) {
  if (pool_ == nullptr) return readOpen(offset, buffer, n);
  std::lock_guard lock(pool_->mutex_);
  return pool_->hold(*this) && readOpen(offset, buffer, n);
}

bool FileBytes::sizeOpen(uint64_t& bytes) const {
  struct stat st{};
  if (fd_ < 0 || fstat(fd_, &st) != 0) return false;
  bytes = static_cast<uint64_t>(st.st_size);
  return true;
}

bool FileBytes::readOpen(uint64_t offset, void* buffer, size_t n) const {
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
