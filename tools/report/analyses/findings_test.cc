// The findings as decided, apart from their words: which exist, about whom, in which order,
// and the figures finding_details carries (what a culprit costs per step and what fixing it
// saves); and that the words print those very figures.
#include "tools/report/analyses/findings.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "tools/report/finding_words.h"

namespace commtrace::report {
namespace {

// A run of 8 ranks on two hosts, 100 steps of 10 ms each, whose tables hold what `flag` says.
Report reportOf(bool flag_rank, bool flag_host) {
  Report r;
  r.run.ranks = 8;
  r.run.processes = 8;
  r.run.files = 8;
  for (int rank = 0; rank < 8; ++rank) {
    OverlapRow o;
    o.rank = rank;
    o.available = true;  // exposing nothing: named last, at the cost tier
    o.step_count = 100;
    o.mean_step_us = 10'000;
    r.overlap.push_back(o);
    StragglerRow s;
    s.rank = rank;
    s.host = rank < 4 ? "node0" : "node1";
    s.instances = 1000;
    s.wait_caused_us = rank == 5 ? 70'000 : 100;
    s.flagged = flag_rank && rank == 5;
    s.step_saved_share = rank == 5 ? 0.08 : StragglerRow::kNotMeasured;
    s.cls = rank == 5 ? "compute" : "none";
    r.stragglers.ranks.push_back(s);
  }
  std::sort(r.stragglers.ranks.begin(), r.stragglers.ranks.end(),
            [](const StragglerRow& a, const StragglerRow& b) { return a.wait_caused_us > b.wait_caused_us; });
  HostStragglerRow h;
  h.host = "node1";
  h.ranks = {4, 5, 6, 7};
  h.wait_caused_us = 70'300;
  h.flagged = flag_host;
  r.stragglers.hosts.push_back(h);
  return r;
}

std::vector<std::string> kinds(const std::vector<Finding>& findings) {
  std::vector<std::string> out;
  for (const Finding& f : findings) out.push_back(f.row.kind);
  return out;
}

TEST(Findings, AStragglerCarriesWhatFixingItSavesAndItsWaitingPerStep) {
  const Report r = reportOf(/*flag_rank=*/true, /*flag_host=*/false);
  const std::vector<Finding> found = findFindings(r, RunModel{});
  ASSERT_FALSE(found.empty());
  const Finding& f = found.front();
  EXPECT_EQ(f.row.kind, "straggler");
  EXPECT_EQ(f.row.subject, "rank 5");
  EXPECT_EQ(f.row.ranks, std::vector<int>{5});
  EXPECT_DOUBLE_EQ(f.row.step_saved_share, 0.08);
  EXPECT_DOUBLE_EQ(f.row.step_saved_us, 800);  // 8 % of the 10 ms step
  EXPECT_DOUBLE_EQ(f.row.cost_per_step_us, 700);                   // 70 ms over 100 steps
  EXPECT_DOUBLE_EQ(f.row.cost_share, 70'000.0 / (100 * 10'000 * 7));  // of the 7 others' time
  const std::string words = findingWords(f);
  EXPECT_NE(words.find("slows every step by about 800 us (8.0% of its 10 ms"), std::string::npos) << words;
  EXPECT_NE(words.find("700 us per step of 10 ms (1.0% of their time)"), std::string::npos) << words;
}

TEST(Findings, AFlaggedHostIsOneCulpritAndItsRanksAreNotNamedAgain) {
  const Report r = reportOf(/*flag_rank=*/true, /*flag_host=*/true);  // the findings point into it
  const std::vector<Finding> found = findFindings(r, RunModel{});
  EXPECT_EQ(kinds(found), (std::vector<std::string>{"slow_host", "exposed_communication"}));
  EXPECT_EQ(found.front().row.subject, "host node1");
  EXPECT_EQ(found.front().row.ranks, (std::vector<int>{4, 5, 6, 7}));
  // Never replayed: no saving is claimed, and the words say why.
  EXPECT_TRUE(std::isnan(found.front().row.step_saved_us));
  EXPECT_NE(findingWords(found.front()).find("was not estimated"), std::string::npos);
}

TEST(Findings, NoCulpritIsANoteNamingTheCostliestRank) {
  const Report r = reportOf(false, false);
  const std::vector<Finding> found = findFindings(r, RunModel{});
  ASSERT_EQ(kinds(found), (std::vector<std::string>{"exposed_communication", "no_straggler"}));
  EXPECT_EQ(found.back().tier, FindingTier::kNote);
  EXPECT_NE(findingWords(found.back()).find("rank 5"), std::string::npos);
}

TEST(Findings, LossComesBeforeCulpritsWhateverOrderTheyWereFoundIn) {
  Report r = reportOf(true, false);
  r.run.missing_ranks = {9};
  r.run.damaged_files = 1;
  const std::vector<Finding> found = findFindings(r, RunModel{});
  EXPECT_EQ(kinds(found), (std::vector<std::string>{"missing_ranks", "damaged_files", "straggler", "exposed_communication"}));
  EXPECT_EQ(found.front().row.severity, "loss");
  EXPECT_EQ(found.front().row.ranks, std::vector<int>{9});
}

TEST(Findings, ACostLargerThanTheTakersWholeTimeGetsNoFigurePerStep) {
  Report r = reportOf(true, false);
  for (OverlapRow& o : r.overlap) o.step_count = 2, o.mean_step_us = 1;  // miscounted steps
  const std::vector<Finding> found = findFindings(r, RunModel{});
  const Finding& f = found.front();
  EXPECT_TRUE(std::isnan(f.row.cost_per_step_us));
  EXPECT_EQ(findingWords(f).find("per step of"), std::string::npos);
}

}  // namespace
}  // namespace commtrace::report

namespace commtrace::report {
namespace {

// Every kind findings.cc adds is in kFindingKinds, which SCHEMA.md's list is made from: two
// kinds were added to the code and never to the documented list.
TEST(FindingKinds, EveryKindTheFindingsAddIsListed) {
  std::ifstream in(std::string(COMMTRACE_SOURCE_DIR) + "/tools/report/analyses/findings.cc");
  const std::string code{std::istreambuf_iterator<char>(in), {}};
  const std::regex added(R"re(FindingTier::k\w+,\s*"(\w+)")re");
  std::set<std::string> kinds;
  for (auto it = std::sregex_iterator(code.begin(), code.end(), added); it != std::sregex_iterator(); ++it) kinds.insert((*it)[1]);
  EXPECT_GE(kinds.size(), 15u) << "the pattern still finds the adds";
  const std::set<std::string> listed(kFindingKinds.begin(), kFindingKinds.end());
  for (const std::string& kind : kinds) EXPECT_TRUE(listed.count(kind)) << kind;
}

}  // namespace
}  // namespace commtrace::report
