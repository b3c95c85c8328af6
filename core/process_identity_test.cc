#include "core/process_identity.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "tests/support/fake_env.h"

namespace commtrace {
namespace {

ProcessIdentity identityOf(std::map<std::string, std::string> env) {
  return identityFrom(testutil::FakeEnv::set(std::move(env)), "ct-generated");
}

struct LauncherCase {
  const char* launcher;
  std::map<std::string, std::string> env;
  int32_t rank, local_rank, world_size;
  const char* job_id;
};

TEST(ProcessIdentityTest, EveryLauncherNamesRankLocalRankWorldAndJob) {
  const LauncherCase cases[] = {
      {"torchrun", {{"RANK", "5"}, {"LOCAL_RANK", "1"}, {"WORLD_SIZE", "8"}, {"TORCHELASTIC_RUN_ID", "run-7"}}, 5, 1, 8,
       "run-7"},
      {"Slurm", {{"SLURM_PROCID", "13"}, {"SLURM_LOCALID", "5"}, {"SLURM_NTASKS", "16"}, {"SLURM_JOB_ID", "4242"}}, 13,
       5, 16, "4242"},
      {"Open MPI",
       {{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "4"},
        {"OMPI_MCA_orte_ess_jobid", "123456"}},
       3, 3, 4, "123456"},
      {"PMIx", {{"PMIX_RANK", "2"}, {"PMIX_NAMESPACE", "prterun-host-1234@1"}}, 2, -1, -1, "prterun-host-1234@1"},
      {"MPICH/PMI", {{"PMI_RANK", "6"}, {"MPI_LOCALRANKID", "2"}, {"PMI_SIZE", "8"}}, 6, 2, 8, "ct-generated"},
  };
  for (const LauncherCase& c : cases) {
    const ProcessIdentity id = identityOf(c.env);
    EXPECT_EQ(id.launcher, c.launcher);
    EXPECT_EQ(id.rank, c.rank) << c.launcher;
    EXPECT_EQ(id.local_rank, c.local_rank) << c.launcher;
    EXPECT_EQ(id.world_size, c.world_size) << c.launcher;
    EXPECT_EQ(id.job_id, c.job_id) << c.launcher;
  }
}

TEST(ProcessIdentityTest, APlainProcessHasNoRankAndAGeneratedJob) {
  const ProcessIdentity id = identityOf({});
  EXPECT_EQ(id.rank, -1);
  EXPECT_EQ(id.world_size, -1);
  EXPECT_EQ(id.launcher, "");
  EXPECT_EQ(id.job_id, "ct-generated");
  EXPECT_EQ(identityOf({{"COMMTRACE_JOB_ID", "mine"}}).job_id, "mine");
}

TEST(ProcessIdentityTest, TorchrunUnderSrunTakesTorchrunsRankAndSlurmsJob) {
  // srun starts one torchrun agent per node; each worker has both sets of variables.
  const ProcessIdentity id = identityOf({{"RANK", "9"}, {"SLURM_PROCID", "1"}, {"WORLD_SIZE", "16"},
                                         {"SLURM_NTASKS", "2"}, {"TORCHELASTIC_RUN_ID", "none"},
                                         {"SLURM_JOB_ID", "777"}});
  EXPECT_EQ(id.rank, 9);
  EXPECT_EQ(id.world_size, 16);
  EXPECT_EQ(id.launcher, "torchrun");
  EXPECT_EQ(id.job_id, "777") << "torchrun's run id 'none' names no job";
}

TEST(ProcessIdentityTest, GarbageIsNoValue) {
  const ProcessIdentity id = identityOf({{"RANK", "x3"}, {"SLURM_PROCID", "4"}, {"WORLD_SIZE", "-2"},
                                         {"TORCHELASTIC_RESTART_COUNT", "2"}, {"NCCL_HOSTID", "node-a"}});
  EXPECT_EQ(id.rank, 4);
  EXPECT_EQ(id.launcher, "Slurm");
  EXPECT_EQ(id.world_size, -1);
  EXPECT_EQ(id.restart_count, 2u);
  EXPECT_EQ(id.nccl_host_id, "node-a");
}

}  // namespace
}  // namespace commtrace
