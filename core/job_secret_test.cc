// The job's secret and "this process made a communicator" are the parent's alone: a forked
// child (a DataLoader worker of rank 0) starts without them.
#include "core/job_secret.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vector>

namespace commtrace {
namespace {

TEST(JobSecret, TheFirstSecretStaysAndAForkedChildForgetsIt) {
  EXPECT_FALSE(jobSecret().has_value());
  const std::vector<uint8_t> first(kJobSecretBytes, 1), second(kJobSecretBytes, 2);
  noteJobSecret(first);
  noteJobSecret(second);
  noteCommunicatorMade();
  ASSERT_TRUE(jobSecret().has_value());
  EXPECT_EQ((*jobSecret())[0], 1);
  EXPECT_TRUE(communicatorMade());
  const pid_t child = fork();
  if (child == 0) {
    forgetJobAfterFork();  // as the library's pthread_atfork child handler does
    _exit(!jobSecret().has_value() && !communicatorMade() ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_TRUE(communicatorMade()) << "the parent keeps its own";
}

}  // namespace
}  // namespace commtrace
