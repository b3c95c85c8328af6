// The test program's own file and where the dynamic linker placed it: what a sampled call
// stack's frames in it are named from (an address in memory less load_bias is one in the file).
#pragma once

#include <link.h>
#include <unistd.h>

#include <cstdint>
#include <string>

namespace commtrace::testutil {

struct OwnModule {
  std::string path;
  uint64_t load_bias = 0;
};

inline OwnModule ownModule() {
  OwnModule own;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* arg) {
        if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0') return 0;  // the program has no name here
        static_cast<OwnModule*>(arg)->load_bias = info->dlpi_addr;
        return 1;
      },
      &own);
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  own.path.assign(exe, n > 0 ? static_cast<size_t>(n) : 0);
  return own;
}

}  // namespace commtrace::testutil
