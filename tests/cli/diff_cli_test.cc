// `commtrace diff RUN_A RUN_B` as a user runs it: the demo job against a copy of it without
// its planted straggler and slow link. The diff must say what the fix changed: the straggler
// and the link gone, the slow link's communicator faster at the same count, the steps
// shorter; a run against itself changes nothing; an op in one run only is new or gone.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/support/commtrace_cli.h"
#include "tests/support/run_program.h"
#include "tests/support/temp_dir.h"

namespace commtrace {
namespace {

using nlohmann::json;
using testutil::ProgramResult;
using testutil::TempDir;
using testutil::commtrace;

// The demo scenario, edited, played into dir.
void play(const TempDir& scratch, const std::string& dir, void (*edit)(json&)) {
  std::ifstream in(COMMTRACE_SCENARIO_DIR "/demo.json");
  json s = json::parse(in);
  edit(s);
  const std::string path = dir + ".json";
  std::ofstream(path) << s.dump();
  const ProgramResult r = testutil::runProgram({COMMTRACE_DRIVER, "--scenario", path, "--out", dir, "--plugin", COMMTRACE_SO}, scratch.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

struct Runs {
  TempDir scratch;
  std::string before = scratch.path() + "/before", after = scratch.path() + "/after", fewer = scratch.path() + "/fewer",
              straggler_fixed = scratch.path() + "/straggler_fixed";
  Runs() {
    play(scratch, before, [](json&) {});
    play(scratch, after, [](json& s) {
      s.erase("stragglers");
      s.erase("slow_links");
    });
    play(scratch, straggler_fixed, [](json& s) { s.erase("stragglers"); });
    // The job without its broadcast: an op gone.
    play(scratch, fewer, [](json& s) {
      json steps = json::array();
      for (const json& item : s["step"])
        if (item.value("op", "") != "Broadcast") steps.push_back(item);
      s["step"] = steps;
    });
  }
};

Runs& runs() {
  static Runs r;
  return r;
}

json diffJson(const std::string& a, const std::string& b) {
  const ProgramResult r = commtrace(runs().scratch, {"diff", a, b, "--format", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json::parse(r.out);
}

const json* opRow(const json& d, const std::string& comm, const std::string& func) {
  for (const json& row : d["ops"])
    if (row["comm"] == comm && row["func"] == func) return &row;
  return nullptr;
}

TEST(DiffCli, TheFixedRunLosesItsCulpritsAndGainsSpeedWhereTheyCost) {
  const json d = diffJson(runs().before, runs().after);
  EXPECT_EQ(d["schema"], "commtrace.diff.v1");
  EXPECT_LT(d["step_us"]["b"].get<double>(), 0.8 * d["step_us"]["a"].get<double>());
  EXPECT_LT(d["comm_time_us"]["b"].get<double>(), d["comm_time_us"]["a"].get<double>());
  ASSERT_EQ(d["findings_gone"].size(), 2u) << d["findings_gone"].dump();
  EXPECT_EQ(d["findings_gone"][0]["kind"], "straggler");
  EXPECT_EQ(d["findings_gone"][0]["subject"], "rank 6");
  EXPECT_EQ(d["findings_gone"][0]["finding"].get<std::string>().rfind("Straggler: rank 6 ", 0), 0u);
  EXPECT_EQ(d["findings_gone"][1]["finding"].get<std::string>().rfind("Slow link: rank 3 <-> rank 7 ", 0), 0u);
  EXPECT_TRUE(d["findings_new"].empty());
  EXPECT_TRUE(d["warnings"].empty()) << d["warnings"].dump();
  // The slow link's communicator (ranks 3 and 7) moved most: same count, about 8x its busBw.
  const json& top = d["ops"][0];
  EXPECT_EQ(top["comm"], "dp.3");
  EXPECT_EQ(top["change"], "");
  EXPECT_EQ(top["a"]["count"], top["b"]["count"]);
  EXPECT_GT(top["b"]["busbw_gbs"].get<double>(), 5 * top["a"]["busbw_gbs"].get<double>());
  // Rank 6 is no longer a straggler, and comes first.
  EXPECT_EQ(d["ranks"][0]["rank"], 6);
  EXPECT_EQ(d["ranks"][0]["straggler"]["a"], true);
  EXPECT_EQ(d["ranks"][0]["straggler"]["b"], false);
}

// The straggler alone fixed: what the report estimated fixing it would save per step is held
// against the step the fixed run measures, within 20%.
TEST(DiffCli, AFixedCulpritsEstimatedGainIsHeldAgainstTheMeasuredOne) {
  const json d = diffJson(runs().before, runs().straggler_fixed);
  ASSERT_EQ(d["gains"].size(), 1u) << d.dump(1);
  const json& g = d["gains"][0];
  EXPECT_EQ(g["subject"], "rank 6");
  EXPECT_EQ(g["finding"].get<std::string>().rfind("Straggler: rank 6 ", 0), 0u);
  const double measured = d["step_us"]["a"].get<double>() - d["step_us"]["b"].get<double>();
  EXPECT_DOUBLE_EQ(g["measured_step_saved_us"].get<double>(), measured);
  EXPECT_GT(measured, 0);
  EXPECT_NEAR(g["estimated_step_saved_us"].get<double>(), measured, 0.2 * measured);
  const ProgramResult text = commtrace(runs().scratch, {"diff", runs().before, runs().straggler_fixed});
  EXPECT_NE(text.out.find("  - rank 6: estimated "), std::string::npos) << text.out;
}

TEST(DiffCli, ARunAgainstItselfChangesNothing) {
  const json d = diffJson(runs().before, runs().before);
  EXPECT_TRUE(d["findings_new"].empty());
  EXPECT_TRUE(d["findings_gone"].empty());
  // Its culprits are in both: what the change did not fix (said nowhere before).
  ASSERT_FALSE(d["findings_kept"].empty());
  EXPECT_EQ(d["findings_kept"][0]["subject"], "rank 6");
  EXPECT_TRUE(d["gains"].empty());
  EXPECT_DOUBLE_EQ(d["step_us"]["a"].get<double>(), d["step_us"]["b"].get<double>());
  for (const json& row : d["ops"]) {
    EXPECT_EQ(row["change"], "") << row.dump();
    EXPECT_EQ(row["a"], row["b"]) << row.dump();
  }
}

// Two runs that are not one job before and after (8 ranks against 2): compared, with a
// warning on stderr and in the output (there was none).
TEST(DiffCli, UnrelatedRunsAreComparedWithAWarning) {
  const std::string tiny = runs().scratch.path() + "/tiny";
  const ProgramResult played =
      testutil::runProgram({COMMTRACE_DRIVER, "--scenario", COMMTRACE_SCENARIO_DIR "/tiny.json", "--out", tiny, "--plugin", COMMTRACE_SO},
                           runs().scratch.path());
  ASSERT_EQ(played.exit_code, 0) << played.err;
  const ProgramResult r = commtrace(runs().scratch, {"diff", runs().before, tiny, "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("commtrace: diff: A has 8 ranks and B 2"), std::string::npos) << r.err;
  const json d = json::parse(r.out);
  ASSERT_FALSE(d["warnings"].empty());
  EXPECT_EQ(d["warnings"][0].get<std::string>().rfind("A has 8 ranks and B 2", 0), 0u);
}

// A directory of two jobs: diff reads one with --job, as report does (diff had no --job,
// while its error told the user to pass one).
TEST(DiffCli, JobChoosesOneJobOfADirectoryOfSeveral) {
  const std::string shared = runs().scratch.path() + "/shared";
  for (const char* launcher : {"slurm", "openmpi"}) {
    const ProgramResult job = testutil::runProgram(
        {COMMTRACE_DRIVER, "--scenario", COMMTRACE_SCENARIO_DIR "/tiny.json", "--out", shared, "--plugin", COMMTRACE_SO, "--launcher", launcher},
        runs().scratch.path(), {{"COMMTRACE_DIR", std::nullopt}, {"NCCL_PROFILER_PLUGIN", std::nullopt}});
    ASSERT_EQ(job.exit_code, 0) << job.err;
  }
  const ProgramResult refused = commtrace(runs().scratch, {"diff", shared, shared});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("choose one with --job ID"), std::string::npos) << refused.err;
  const ProgramResult one = commtrace(runs().scratch, {"diff", shared, shared, "--job", "4242", "--format", "json"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_GT(json::parse(one.out)["ops"].size(), 0u);
}

TEST(DiffCli, AnOpInOneRunOnlyIsGoneOrNew) {
  const json gone = diffJson(runs().before, runs().fewer);
  const json* broadcast = opRow(gone, "world.0", "Broadcast");
  ASSERT_NE(broadcast, nullptr) << gone["ops"].dump();
  EXPECT_EQ((*broadcast)["change"], "gone");
  EXPECT_EQ((*broadcast)["b"]["count"], 0);
  const json back = diffJson(runs().fewer, runs().before);
  ASSERT_NE(opRow(back, "world.0", "Broadcast"), nullptr);
  EXPECT_EQ((*opRow(back, "world.0", "Broadcast"))["change"], "new");
}

TEST(DiffCli, TextNamesTheRunsAndAnUnreadableRunExitsOne) {
  const ProgramResult text = commtrace(runs().scratch, {"diff", runs().before, runs().after});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_EQ(text.err, "") << "one job before and after: no warning";
  // Every op in both runs has its change (the column was empty), most changed first.
  const size_t table = text.out.find("\nOps by (communicator, func, size)");
  ASSERT_NE(table, std::string::npos) << text.out;
  const std::vector<std::string> rows = testutil::linesOf(text.out.substr(table));
  ASSERT_GT(rows.size(), 4u);
  EXPECT_NE(rows[3].find("dp.3"), std::string::npos) << rows[3];
  EXPECT_NE(rows[3].find("%"), std::string::npos) << rows[3];
  EXPECT_NE(text.out.find("  A: " + runs().before), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("Step time (median rank's mean): "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("Culprits and losses only in A (gone in B)\n  - Straggler: rank 6 "), std::string::npos) << text.out;
  const ProgramResult missing = commtrace(runs().scratch, {"diff", runs().before, runs().scratch.path() + "/nothing"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("could not be analysed"), std::string::npos) << missing.err;
  EXPECT_EQ(commtrace(runs().scratch, {"diff", runs().before}).exit_code, 2);
}

}  // namespace
}  // namespace commtrace
