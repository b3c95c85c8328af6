#include "tools/spool_trim.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <unistd.h>

#include <algorithm>

namespace commtrace::tools {

bool SpoolTrimmer::release(const std::string& path, uint64_t from, uint64_t consumed) {
  constexpr uint64_t kBlock = 4096;
  uint64_t& done = released_.try_emplace(path, (from + kBlock - 1) / kBlock * kBlock).first->second;
  const uint64_t until = consumed / kBlock * kBlock;  // whole blocks only: a partial one is not freed anyway
  if (until < done + kMinRelease) return true;
  const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool punched = fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(done),
                                 static_cast<off_t>(until - done)) == 0;
  close(fd);
  if (punched) done = until;
  return punched;
}

}  // namespace commtrace::tools
