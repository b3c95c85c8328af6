// Where a TraceReader's bytes come from: a trace file (read with pread, its size looked at
// again on refresh), or a stream held in memory that grows as its writer's frames arrive (the
// live collector's digests, which never touch a disk). Offsets are the stream's from its first
// byte; what the reader has consumed it releases, and a memory stream frees it.
#pragma once

#include <cstddef>
#include <cstdint>
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

class FileBytes final : public ByteSource {
 public:
  // false with errno set when the path cannot be opened or is not a regular file.
  bool open(const std::string& path);
  ~FileBytes() override;
  bool size(uint64_t& bytes) override;
  bool readAt(uint64_t offset, void* buffer, size_t n) override;

 private:
  int fd_ = -1;
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
