// `commtrace report` on real traces from an H100 (tests/data/h100-torch-2ranks): what CUPTI,
// NVTX and NCCL really reported must come out as the run was. CUPTI names kernels mangled,
// and NCCL's must still be told from compute and tie CUPTI's clock to the GPU's; the steps are
// the job's train_step ranges, not NCCL's own; a rank that slept on the host before each
// AllReduce is a host straggler.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "tests/support/run_program.h"
#include "tests/support/temp_dir.h"

namespace commtrace {
namespace {

using nlohmann::json;

const std::string kRuns = GPU_RUNS_DIR;

json report(const std::string& dir) {
  testutil::TempDir scratch;
  const testutil::ProgramResult r =
      testutil::runProgram({COMMTRACE_CLI, "report", dir, "--format", "json", "--progress", "never"}, scratch.path());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json::parse(r.out);
}

const json* kernelNamed(const json& r, std::string_view prefix) {
  for (const json& k : r.at("kernels").at("top"))
    if (k.at("name").get<std::string>().starts_with(prefix)) return &k;
  return nullptr;
}

TEST(RealGpuRun, CuptisMangledNcclKernelsPlaceComputeOnTheGpuClock) {
  const json r = report(kRuns + "/plain");
  EXPECT_EQ(r.at("run").at("ranks"), 2);
  EXPECT_EQ(r.at("run").at("collective_instances"), 40);
  ASSERT_EQ(r.at("overlap").size(), 2u);
  for (const json& row : r.at("overlap")) {
    ASSERT_TRUE(row.at("available").get<bool>()) << row.dump();
    EXPECT_EQ(row.at("kernel_clock").at("nccl_kernels"), 40);
    EXPECT_EQ(row.at("kernel_clock").at("matched"), 40);
    EXPECT_LT(row.at("kernel_clock").at("residual_rms_us").get<double>(), 1.0);
    EXPECT_GT(row.at("overlapped_us").get<double>(), 0);
  }
  const json* nccl = kernelNamed(r, "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
  ASSERT_NE(nccl, nullptr) << "demangled";
  EXPECT_EQ(nccl->at("type"), "communication");
  const json* gemm = kernelNamed(r, "void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>");
  ASSERT_NE(gemm, nullptr) << "demangled";
  EXPECT_EQ(gemm->at("type"), "computation");
  for (const json& f : r.at("findings")) EXPECT_EQ(f.get<std::string>().find(" on  ("), std::string::npos) << f;
}

TEST(RealGpuRun, StepsAreTheJobsTrainStepRangesNotNcclsOwn) {
  const json r = report(kRuns + "/plain");
  for (const json& row : r.at("overlap")) {
    EXPECT_EQ(row.at("step_source"), "nvtx");
    EXPECT_EQ(row.at("steps").size(), 39u) << "train_step 0 was lost when these were recorded (README.md)";
  }
  for (const json& s : r.at("stragglers")) EXPECT_FALSE(s.at("flagged").get<bool>()) << s.dump();
}

TEST(RealGpuRun, ARankSleepingBeforeEachAllReduceIsAHostStraggler) {
  const json r = report(kRuns + "/straggler");
  const json& stragglers = r.at("stragglers");
  ASSERT_FALSE(stragglers.empty());
  const json& worst = stragglers[0];
  EXPECT_EQ(worst.at("rank"), 1);
  EXPECT_TRUE(worst.at("flagged").get<bool>());
  EXPECT_EQ(worst.at("class"), "host") << worst.at("evidence");
  EXPECT_NEAR(worst.at("mean_lateness_us").get<double>(), 15'600, 1'000);
  EXPECT_LT(worst.at("compute_share").get<double>(), 0.2);
  for (size_t k = 1; k < stragglers.size(); ++k) EXPECT_FALSE(stragglers[k].at("flagged").get<bool>());
  // What it cost rank 0: the live alert said "others kept waiting 25.0% of their time".
  const json& finding = r.at("finding_details").at(0);
  EXPECT_EQ(finding.at("kind"), "straggler");
  EXPECT_EQ(finding.at("ranks"), json::array({1}));
  EXPECT_NEAR(finding.at("cost_share").get<double>(), 0.26, 0.04) << finding.at("finding");
}

}  // namespace
}  // namespace commtrace
