// The collector gives back what it has read of a spool file: the blocks are freed, the file
// keeps its size, its header and every byte not yet read.
#include "tools/spool_trim.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <vector>

#include "tests/support/temp_dir.h"

namespace commtrace::tools {
namespace {

std::vector<char> readAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

uint64_t allocatedBytes(const std::string& path) {
  struct stat st {};
  stat(path.c_str(), &st);
  return static_cast<uint64_t>(st.st_blocks) * 512;
}

TEST(SpoolTrimmer, FreesWhatWasReadAndKeepsTheRest) {
  testutil::TempDir dir;
  const std::string path = dir.path() + "/rank.ctrace";
  std::vector<char> bytes(3 << 20);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(1 + i % 251);
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  const uint64_t before = allocatedBytes(path);
  SpoolTrimmer trimmer;
  EXPECT_TRUE(trimmer.release(path, 100, 32 << 10));  // under kMinRelease: nothing yet
  EXPECT_EQ(allocatedBytes(path), before);
  if (!trimmer.release(path, 100, (5 << 20) / 2)) GTEST_SKIP() << "this file system cannot punch holes";
  EXPECT_LE(allocatedBytes(path), before - (2 << 20)) << "about 2.5 MiB read: 2 MiB and more freed";
  const std::vector<char> after = readAll(path);
  ASSERT_EQ(after.size(), bytes.size()) << "the file keeps its size: offsets stay valid";
  EXPECT_TRUE(std::equal(after.begin(), after.begin() + 4096, bytes.begin())) << "the first block (the header) is kept";
  EXPECT_TRUE(std::equal(after.begin() + (5 << 20) / 2, after.end(), bytes.begin() + (5 << 20) / 2)) << "what was not read is kept";
  EXPECT_EQ(after[8192], 0) << "a freed block reads as zeros";
}

}  // namespace
}  // namespace commtrace::tools
