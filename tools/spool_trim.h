// The collector's spool grows by every digest (some 0.4 KB/s per rank: 1.6 GB an hour at
// 1,024 ranks), while the live engine needs only what it has not read yet. Each look, the
// part of a spool file the engine has consumed is given back to the file system
// (fallocate PUNCH_HOLE: offsets stay valid, the file keeps its size and its header, the
// blocks are freed), 64 KiB or more at a time: at most that, plus the header, stays per rank.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace commtrace::tools {

class SpoolTrimmer {
 public:
  static constexpr uint64_t kMinRelease = 64 << 10;  // a spool holds at most this much read per rank

  // path's bytes [from, consumed) are read and no longer needed (from: the first byte after
  // the FileHeader frame, kept for a later reader). false when the file system cannot punch
  // holes (the spool then just grows).
  bool release(const std::string& path, uint64_t from, uint64_t consumed);

 private:
  std::map<std::string, uint64_t> released_;  // per file: freed up to here
};

}  // namespace commtrace::tools
