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
#include <tuple>
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

// The exposed-communication finding names where in the program most exposed time came from,
// the layers folded into one path as the steps are.
TEST(Findings, ExposedCommunicationNamesTheMostExposedNvtxPathLayersAsOne) {
  Report r = reportOf(false, false);
  r.overlap[3].comm_us = 1'000;
  r.overlap[3].exposed_us = 500;
  const auto path = [](const char* name, double comm_us, double exposed_us) {
    return CallPathRow{.path = name, .ops = 10, .ranks = 8, .comm_us = comm_us, .exposure_known = true, .exposed_us = exposed_us};
  };
  r.call_paths = {path("step # / forward / layers.0.attention", 900, 300), path("step # / forward / layers.1.attention", 900, 300),
                  path("step # / backward / layers.0", 2'000, 400)};
  const std::vector<Finding> found = findFindings(r, RunModel{});
  ASSERT_EQ(found.front().row.kind, "exposed_communication");
  const std::string words = findingWords(found.front());
  EXPECT_NE(words.find("rank 3 spends 1 ms in communication kernels, 500 us of it (50.0%)"), std::string::npos) << words;
  EXPECT_NE(words.find("the ops issued under NVTX path step # / forward / layers.#.attention are 33.3% exposed (600 us of 1.8 ms), 60.0% of all the exposed time."),
            std::string::npos)
      << words;
  EXPECT_EQ(words.find("late peer"), std::string::npos) << "its ops waited for nobody";

  // Most of the layers' time was waiting for a late peer: said, as not these ops' doing
  // (a fifth is a peer's jitter, not said).
  r.call_paths[0].waited_us = r.call_paths[1].waited_us = 450;
  const std::string waited = findingWords(findFindings(r, RunModel{}).front());
  EXPECT_NE(waited.find(" 50.0% of their time (900 us) was waiting for a late peer rather than moving data"), std::string::npos) << waited;
  r.call_paths[1].waited_known = false;  // an AlltoAll's pieces: one layer's wait not known, so neither is the fold's
  EXPECT_EQ(findingWords(findFindings(r, RunModel{}).front()).find("late peer"), std::string::npos);
  r.call_paths[1].waited_known = true;
  r.call_paths[0].waited_us = r.call_paths[1].waited_us = 180;
  EXPECT_EQ(findingWords(findFindings(r, RunModel{}).front()).find("late peer"), std::string::npos);

  r.call_paths[2].exposure_known = false;  // one path unmeasured: no path is named
  EXPECT_EQ(findingWords(findFindings(r, RunModel{}).front()).find("NVTX"), std::string::npos);
}

// Last far more often than chance, yet its delays cost little: the note says that, not
// "the last arriver changes from op to op (most often rank 1, last in 100.0%)".
TEST(Findings, NoCulpritLastBeyondChanceSaysItsDelaysCostLittle) {
  Report r = reportOf(false, false);
  StragglerRow& top = r.stragglers.ranks.front();
  top.late_fraction = 1.0;
  top.chance_fraction = 0.125;
  top.z = 9;
  top.median_wait_caused_us = 35'000;  // its 70 ms is 2x the typical rank's
  const std::string words = findingWords(findFindings(r, RunModel{}).back());
  EXPECT_NE(words.find("rank 5 created the delay in 100.0% of its 1000 synchronizations, more often than chance (12.5%)"), std::string::npos)
      << words;
  EXPECT_NE(words.find("2.0x the typical rank's, not 3x"), std::string::npos) << words;
}

// Four pipeline ranks each waiting as long on its peer are the pipeline's shape: the bubble
// names the four, not the one that came first (which was a slow link's pair).
TEST(Findings, APipelineBubbleOfEqualWaitsNamesEveryWaitingRank) {
  Report r = reportOf(false, false);
  for (const auto& [rank, peer, share] : std::vector<std::tuple<int, int, double>>{{3, 7, 20.0}, {2, 6, 19.5}, {1, 5, 19.0}, {0, 4, 18.5}, {4, 0, 5.0}})
    r.peer_waits.push_back({.rank = rank, .peer = peer, .transfers = 100, .waited = 100, .wait_us = 20'000 * share,
                            .steps = 100, .wait_per_step_us = 200 * share, .step_share_pct = share});
  const std::vector<Finding> found = findFindings(r, RunModel{});
  const auto bubble = std::find_if(found.begin(), found.end(), [](const Finding& f) { return f.row.kind == "pipeline_bubble"; });
  ASSERT_NE(bubble, found.end());
  EXPECT_EQ(bubble->row.subject, "4 ranks");
  EXPECT_EQ(bubble->row.ranks, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  const std::string words = findingWords(*bubble);
  EXPECT_NE(words.find("4 ranks waited about as long on a peer"), std::string::npos) << words;
  EXPECT_NE(words.find("(rank 3 for rank 7, rank 2 for rank 6, rank 1 for rank 5 and rank 0 for rank 4)"), std::string::npos) << words;
}

// COMMTRACE_PROXY_EVENTS=1 is suggested only to a run that did not record proxy steps; one
// that did is told why they timed no link (it was told to record them).
TEST(Findings, TheProxyStepHintIsForRunsWithoutThem) {
  Finding without{FindingTier::kNote, {}, facts::LinksNotToldApart{4, 10.0, 0}};
  without.row.kind = "links_not_told_apart";
  EXPECT_NE(findingWords(without).find("COMMTRACE_PROXY_EVENTS=1"), std::string::npos) << findingWords(without);
  Finding with{FindingTier::kNote, {}, facts::LinksNotToldApart{4, 10.0, 38'400}};
  with.row.kind = "links_not_told_apart";
  EXPECT_EQ(findingWords(with).find("COMMTRACE_PROXY_EVENTS=1"), std::string::npos) << findingWords(with);
  EXPECT_NE(findingWords(with).find("the run's 38400 proxy steps timed none of these links"), std::string::npos) << findingWords(with);

  // Counted from the files: every ProxyStep record, whether it timed a link or not.
  RunModel run;
  run.timelines.resize(2);
  run.timelines[1].proxy_wire.add(ProxyStepRecord{});
  Report r = reportOf(false, false);
  for (int i = 0; i < 3; ++i) {
    SlowLinkRow l;
    l.a = i, l.b = i + 4, l.inter_host = true, l.ops = 100, l.achieved_gbs = 10, l.peer_median_gbs = 10, l.kind_links = 3;
    r.stragglers.links.push_back(l);
  }
  const std::vector<Finding> found = findFindings(r, run);
  const auto note = std::find_if(found.begin(), found.end(), [](const Finding& f) { return f.row.kind == "links_not_told_apart"; });
  ASSERT_NE(note, found.end()) << testing::PrintToString(kinds(found));
  EXPECT_EQ(std::get<facts::LinksNotToldApart>(note->facts).proxy_steps, 1u);
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
