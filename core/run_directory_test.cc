#include "core/run_directory.h"

#include <gtest/gtest.h>

#include <cstring>

namespace commtrace {
namespace {

TEST(RunDirectoryTest, EachJobGetsItsOwnDirectoryUnlessCommtraceDirIsSet) {
  Settings unset;
  ProcessIdentity job;
  job.job_id = "4242";
  EXPECT_EQ(runDirectory(unset, job), "commtrace-run/4242");
  job.job_id = "ct-18a2b3c4d5e6f708-1f2e";
  EXPECT_EQ(runDirectory(unset, job), "commtrace-run/ct-18a2b3c4d5e6f708-1f2e");

  Settings given;
  std::strcpy(given.dir, "/scratch/traces");
  EXPECT_EQ(runDirectory(given, job), "/scratch/traces");
}

TEST(RunDirectoryTest, AJobIdBecomesOneSafePathComponent) {
  EXPECT_EQ(jobDirectoryName("prterun-host-1234@1"), "prterun-host-1234@1");
  EXPECT_EQ(jobDirectoryName("a/../b c"), "a_.._b_c");
  EXPECT_EQ(jobDirectoryName(".."), "_.");
  EXPECT_EQ(jobDirectoryName(".hidden"), "_hidden");
  EXPECT_EQ(jobDirectoryName(std::string_view("x\ny\0z", 5)), "x_y_z");
  EXPECT_EQ(jobDirectoryName(""), "unnamed-job");
  EXPECT_EQ(jobDirectoryName(std::string(300, 'j')), std::string(200, 'j'));
}

}  // namespace
}  // namespace commtrace
