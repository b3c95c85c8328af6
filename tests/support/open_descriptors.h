// The descriptors this process holds open on the files of one directory (/proc/self/fd).
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <system_error>

namespace commtrace::testutil {

inline size_t descriptorsInto(const std::string& dir) {
  size_t n = 0;
  for (const auto& fd : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const std::filesystem::path target = std::filesystem::read_symlink(fd.path(), ec);
    if (!ec && target.parent_path() == std::filesystem::path(dir)) ++n;
  }
  return n;
}

}  // namespace commtrace::testutil
