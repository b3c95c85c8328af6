// Where a TraceReader's bytes come from: a trace file (read with pread, its size looked at
// again on refresh), or a stream held in memory that grows as its writer's frames arrive (the
// live collector's digests, which never touch a disk). Offsets are the stream's from its first
// byte; what the reader has consumed it releases, and a memory stream frees it.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <list>
#include <mutex>
#include <span>
#include <string>
#include <vector>

namespace commtrace {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // How far the stream reaches now; false when it can no longer be looked at.
  virtual bool size(uint64_t& bytes) = 0;
  // Exactly n bytes from offset; false when they cannot be read (or were released).
  virtual bool readAt(uint64_t offset, void* buffer, size_t n) = 0;
  // The reader needs nothing before this offset again.
  virtual void release(uint64_t /*offset*/) {}
};

class FileBytes;

// Descriptors for more files than a process may hold open (a 16,384-rank run's files under a
// limit of 1,024): a FileBytes given the pool holds a descriptor while the pool has room; for
// another's, the one read least recently is closed, and reopened by path when it is read
// again (the same file: its device and inode are checked). Thread-safe: a read takes the
// pool's lock, so that no descriptor is closed while another thread reads through it.
class DescriptorPool {
 public:
  explicit DescriptorPool(size_t budget) : budget_(budget == 0 ? 1 : budget) {}

 private:
  friend class FileBytes;
  // f's descriptor open (the least recently read's closed for it, when the pool is full) and
  // f the most recently read; false with errno set when it cannot be.
  bool hold(FileBytes& f);
  void makeRoom();  // the least recently read's descriptors closed until one more fits
  void drop(FileBytes& f);
  std::mutex mutex_;
  std::list<FileBytes*> held_;  // with a descriptor, the least recently read first
  const size_t budget_;
};

class FileBytes final : public ByteSource {
 public:
  // false with errno set when the path cannot be opened or is not a regular file. With a
  // pool, the descriptor is the pool's to close and reopen (above).
  bool open(const std::string& path, DescriptorPool* pool = nullptr);
  ~FileBytes() override;
  bool size(uint64_t& bytes) override;
  bool readAt(uint64_t offset, void* buffer, size_t n) override;

 private:
  friend class DescriptorPool;
  bool sizeOpen(uint64_t& bytes) const;
  bool readOpen(uint64_t offset, void* buffer, size_t n) const;
  bool reopen();  // by path, the same file (device and inode) or false with errno ESTALE
  int fd_ = -1;
  DescriptorPool* pool_ = nullptr;
  std::string path_;
  dev_t device_ = 0;
  ino_t inode_ = 0;
  std::list<FileBytes*>::iterator held_at_;
  bool held_ = false;
};

// Appended to by one owner and read by one reader on the same thread.
class StreamBytes final : public ByteSource {
 public:
  void append(std::span<const uint8_t> bytes) { data_.insert(data_.end(), bytes.begin(), bytes.end()); }
  bool size(uint64_t& bytes) override {
    bytes = base_ + data_.size();
    return true;
  }
  bool readAt(uint64_t offset, void* buffer, size_t n) override;
  void release(uint64_t offset) override;
  size_t held() const { return data_.size(); }  // bytes appended and not yet released

 private:
  uint64_t base_ = 0;  // the stream offset of data_[0]
  std::vector<uint8_t> data_;
};

}  // namespace commtrace
