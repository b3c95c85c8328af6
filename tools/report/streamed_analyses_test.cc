// The analyses fed op by op (StreamedAnalyses: bandwidth, straggler arrivals, collective
// shapes for the matrix and the slow links): fed by the loader while it reads, they equal
// the same analyses over the run replayed whole; fed two shards of a run apart and merged,
// they equal the whole run fed to one.
#include <gtest/gtest.h>

#include <map>

#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "tests/support/temp_dir.h"
#include "tools/report/analyses/comm_matrix.h"
#include "tools/report/analyses/mismatches.h"
#include "tools/report/build_report.h"
#include "tools/report/evidence_words.h"
#include "tools/report/finding_words.h"
#include "tools/report/load/run_loader.h"
#include "tools/report/output/json_report.h"
#include "tools/report/output/text_report.h"
#include "tools/synthetic/run_writer.h"

namespace commtrace::report {
namespace {

// A mixed run (world, tensor- and data-parallel communicators, sends and receives) with a
// planted straggler, loaded with its ops also fed to `streamed`.
// lose_a_file: one rank's file is deleted before reading, so every instance of its
// communicators has a seat no file fills.
RunModel loadSyntheticRun(const std::string& dir, StreamedAnalyses& streamed, bool lose_a_file = false) {
  synthetic::SyntheticRunOptions options;
  options.dir = dir;
  options.ranks = 16;
  options.collectives_per_rank = 3000;
  synthetic::SyntheticRunTruth truth;
  std::string error;
  EXPECT_TRUE(synthetic::writeSyntheticRun(options, truth, error)) << error;
  if (lose_a_file) std::filesystem::remove(std::filesystem::directory_iterator(dir)->path());
  RunModel run;
  std::ostringstream err;
  EXPECT_TRUE(loadRun({.paths = {dir}, .stream = &streamed}, run, err)) << err.str();
  return run;
}

void expectSameBandwidth(const std::vector<BandwidthRow>& a, const std::vector<BandwidthRow>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].comm, b[i].comm) << i;
    EXPECT_EQ(a[i].func, b[i].func) << i;
    EXPECT_EQ(a[i].bytes, b[i].bytes) << i;
    EXPECT_EQ(a[i].count, b[i].count) << i;
    EXPECT_EQ(a[i].timed, b[i].timed) << i;
    EXPECT_DOUBLE_EQ(a[i].time_us_p50, b[i].time_us_p50) << i;
    EXPECT_DOUBLE_EQ(a[i].time_us_p90, b[i].time_us_p90) << i;
    EXPECT_DOUBLE_EQ(a[i].busbw_gbs_p50, b[i].busbw_gbs_p50) << i;
  }
}

// How far the order instances come in may move the attributed figures: the loader's (its
// files in step, the same every time) against the run replayed in issue order. Within 1.1 %
// seen (late_fraction 0.582 against 0.571); an order-independent attribution would make it 0.
constexpr double kOrderTolerance = 0.02;

// The same verdicts, and figures within `tolerance` (relative; 0: to the last few bits, the
// sums added in another order). Root-cause attribution follows each rank's ops in order:
// fed another way (the loader's order, the run replayed in issue order, a snapshot while
// some ops still wait for their predecessors, halves merged) a few instances pass their
// blame along another op, so its figures agree to within a percent or so, not to the bit.
void expectSameStragglers(const StragglerReport& a, const StragglerReport& b, double tolerance = 0) {
  ASSERT_EQ(a.ranks.size(), b.ranks.size());
  std::map<int, const StragglerRow*> by_rank;
  for (const StragglerRow& row : b.ranks) by_rank[row.rank] = &row;
  for (size_t i = 0; i < a.ranks.size(); ++i) {
    const StragglerRow& x = a.ranks[i];
    ASSERT_EQ(by_rank.count(x.rank), 1u) << x.rank;
    const StragglerRow& y = *by_rank[x.rank];
    if (tolerance == 0) {
      EXPECT_EQ(x.rank, b.ranks[i].rank) << i;
    }
    EXPECT_EQ(x.instances, y.instances) << x.rank;
    EXPECT_NEAR(x.wait_caused_us, y.wait_caused_us, std::max(1e-9, tolerance) * x.wait_caused_us + (tolerance > 0 ? 1e3 : 0)) << x.rank;
    EXPECT_NEAR(x.late_fraction, y.late_fraction, std::max(1e-12, tolerance)) << x.rank;
    EXPECT_EQ(x.flagged, y.flagged) << x.rank;
    EXPECT_EQ(x.cls, y.cls) << x.rank;
    if (tolerance == 0) {
      EXPECT_EQ(evidenceWords(x), evidenceWords(y)) << x.rank;
    }
  }
  EXPECT_EQ(a.ranks.front().rank, b.ranks.front().rank) << "the costliest rank";
  ASSERT_EQ(a.links.size(), b.links.size());
  for (size_t i = 0; i < a.links.size(); ++i) {
    EXPECT_EQ(std::tie(a.links[i].a, a.links[i].b, a.links[i].ops), std::tie(b.links[i].a, b.links[i].b, b.links[i].ops)) << i;
    EXPECT_DOUBLE_EQ(a.links[i].achieved_gbs, b.links[i].achieved_gbs) << i;
    EXPECT_EQ(a.links[i].flagged, b.links[i].flagged) << i;
  }
  EXPECT_EQ(a.heatmap.ranks, b.heatmap.ranks);
  ASSERT_EQ(a.heatmap.mean_lateness_us.size(), b.heatmap.mean_lateness_us.size());
  for (size_t r = 0; r < a.heatmap.mean_lateness_us.size(); ++r)
    for (size_t i = 0; i < a.heatmap.mean_lateness_us[r].size(); ++i)
      EXPECT_NEAR(a.heatmap.mean_lateness_us[r][i], b.heatmap.mean_lateness_us[r][i], 1e-9 * std::abs(a.heatmap.mean_lateness_us[r][i]))
          << "rank row " << r << " bin " << i;
  EXPECT_EQ(a.heatmap.start_us, b.heatmap.start_us);
  EXPECT_EQ(a.heatmap.bin_us, b.heatmap.bin_us);
  ASSERT_EQ(a.comms.size(), b.comms.size());
  for (size_t i = 0; i < a.comms.size(); ++i) {
    EXPECT_EQ(a.comms[i].comm, b.comms[i].comm) << i;
    EXPECT_EQ(a.comms[i].instances, b.comms[i].instances) << i;
    EXPECT_NEAR(a.comms[i].total_wait_us, b.comms[i].total_wait_us, 1e-9 * a.comms[i].total_wait_us) << i;
  }
}

// Integer sums: equal exactly however they were fed.
void expectSameMatrix(const CommMatrix& a, const CommMatrix& b) {
  EXPECT_EQ(a.bytes, b.bytes);
  EXPECT_EQ(a.p2p_bytes, b.p2p_bytes);
  EXPECT_EQ(a.time_us, b.time_us);
  EXPECT_EQ(a.model, b.model);
  ASSERT_EQ(a.slices.size(), b.slices.size());
  for (size_t i = 0; i < a.slices.size(); ++i) {
    EXPECT_EQ(a.slices[i].label, b.slices[i].label);
    EXPECT_EQ(a.slices[i].cells.size(), b.slices[i].cells.size()) << a.slices[i].label;
  }
}

// The anchor sample is chosen by hash, not by arrival: the same fits to the last bit.
void expectSameClocks(const ClockAlignment& a, const ClockAlignment& b) {
  ASSERT_EQ(a.summary.fits.size(), b.summary.fits.size());
  for (size_t p = 0; p < a.summary.fits.size(); ++p) {
    EXPECT_TRUE(a.summary.fits[p].aligned) << p;
    EXPECT_EQ(a.summary.fits[p].anchors, b.summary.fits[p].anchors) << p;
    EXPECT_EQ(a.summary.fits[p].offset_us, b.summary.fits[p].offset_us) << p;
    EXPECT_EQ(a.summary.fits[p].drift_ppm, b.summary.fits[p].drift_ppm) << p;
  }
  EXPECT_EQ(a.summary.residual_us_max, b.summary.residual_us_max);
}

TEST(StreamedAnalyses, FedWhileLoadingEqualsTheRunReplayedWhole) {
  testutil::TempDir dir;
  StreamedAnalyses fed;
  const RunModel run = loadSyntheticRun(dir.path() + "/run", fed);
  StreamedAnalyses replayed;
  replayRun(run, replayed);
  const std::vector<BandwidthRow> rows = fed.bandwidth.rows(run);
  ASSERT_FALSE(rows.empty());
  expectSameBandwidth(rows, replayed.bandwidth.rows(run));
  const ClockAlignment clocks = alignClocks(run, fed.anchors);
  expectSameClocks(clocks, alignClocks(run));
  const StragglerReport stragglers = rankStragglers(run, clocks, {fed.arrivals, fed.shapes, fed.transfer_cells, fed.lateness});
  ASSERT_FALSE(stragglers.ranks.empty());
  EXPECT_TRUE(stragglers.ranks.front().flagged) << "the planted straggler";
  ASSERT_FALSE(stragglers.links.empty());
  expectSameStragglers(stragglers, rankStragglers(run, clocks, {replayed.arrivals, replayed.shapes, replayed.transfer_cells, replayed.lateness}),
                       kOrderTolerance);
  const CommMatrix matrix = communicationMatrix(run, fed.shapes, fed.transfer_cells);
  ASSERT_GT(matrix.slices.size(), 1u);
  expectSameMatrix(matrix, communicationMatrix(run, replayed.shapes, replayed.transfer_cells));
  expectSameMatrix(matrix, communicationMatrix(run));
  std::vector<uint64_t> instances(run.comms.size(), 0);
  for (const CollInstance& c : run.collectives) ++instances[c.comm];
  EXPECT_EQ(fed.shapes.instancesPerComm(run.comms.size()), instances);
  ASSERT_FALSE(run.transfers.empty());
  EXPECT_EQ(fed.transfer_gaps.transfers(), run.transfers.size());
  EXPECT_FALSE(fed.transfer_cells.cells().empty());
  EXPECT_EQ(fed.peer_waits.pairs(), replayed.peer_waits.pairs());
}

TEST(StreamedAnalyses, TwoShardsMergedEqualTheWholeRun) {
  testutil::TempDir dir;
  StreamedAnalyses whole;
  const RunModel run = loadSyntheticRun(dir.path() + "/run", whole);
  // Shards as two machines would see them: every other instance and transfer.
  StreamedAnalyses shards[2];
  for (size_t i = 0; i < run.collectives.size(); ++i) {
    const CollInstance& c = run.collectives[i];
    shards[i % 2].collective(c, {run.membersOf(c), c.n_members});
  }
  for (size_t i = 0; i < run.transfers.size(); ++i) shards[i % 2].transfer(run.transfers[i]);
  for (StreamedAnalyses& shard : shards) shard.finish();
  shards[0].merge(shards[1]);
  expectSameClocks(alignClocks(run, whole.anchors), alignClocks(run, shards[0].anchors));

  expectSameBandwidth(whole.bandwidth.rows(run), shards[0].bandwidth.rows(run));
  const ClockAlignment clocks = alignClocks(run);
  // Waits pass back along each rank's ops in order: the stragglers merge from shards of time.
  const auto issued = [&](std::span<const MemberView> members) {
    uint64_t t = UINT64_MAX;
    for (const MemberView& m : members)
      if (m.process >= 0 && m.cpu_start_ns != 0) t = std::min(t, run.processes[static_cast<size_t>(m.process)].utcOfCpu(m.cpu_start_ns));
    return t;
  };
  const uint64_t middle = (run.processes.front().first_op_utc_ns + run.processes.front().last_op_utc_ns) / 2;
  ArrivalTally halves[2];
  for (const CollInstance& c : run.collectives) halves[issued({run.membersOf(c), c.n_members}) < middle ? 0 : 1].collective(c, {run.membersOf(c), c.n_members});
  for (const P2pTransfer& t : run.transfers) {
    const MemberView sides[] = {t.send, t.recv};
    halves[issued(sides) < middle ? 0 : 1].transfer(t);
  }
  for (ArrivalTally& half : halves) half.finish();
  halves[0].merge(halves[1]);
  expectSameStragglers(rankStragglers(run, clocks, {whole.arrivals, whole.shapes, whole.transfer_cells, whole.lateness}),
                       rankStragglers(run, clocks, {halves[0], shards[0].shapes, shards[0].transfer_cells, shards[0].lateness}), 0.02);
  expectSameMatrix(communicationMatrix(run, whole.shapes, whole.transfer_cells),
                   communicationMatrix(run, shards[0].shapes, shards[0].transfer_cells));
  EXPECT_EQ(whole.transfer_gaps.transfers(), shards[0].transfer_gaps.transfers());
  ASSERT_FALSE(whole.peer_waits.pairs().empty());
  EXPECT_EQ(whole.peer_waits.pairs(), shards[0].peer_waits.pairs());
  ASSERT_FALSE(whole.traffic.byProcess().empty());
  EXPECT_EQ(whole.traffic.byProcess(), shards[0].traffic.byProcess());
}

// Feeds the run's collectives and transfers in [from, to) of each (a fraction of the run).
void feed(const RunModel& run, double from, double to, JoinedOpSink& sink) {
  const auto range = [&](size_t n) { return std::make_pair(static_cast<size_t>(from * n), static_cast<size_t>(to * n)); };
  const auto [c0, c1] = range(run.collectives.size());
  for (size_t i = c0; i < c1; ++i) sink.collective(run.collectives[i], {run.membersOf(run.collectives[i]), run.collectives[i].n_members});
  const auto [t0, t1] = range(run.transfers.size());
  for (size_t i = t0; i < t1; ++i) sink.transfer(run.transfers[i]);
}

// A live view: a snapshot taken while ops still come says what the ops fed so far say, and
// the stream goes on to the same end as one never looked at.
TEST(StreamedAnalyses, ASnapshotMidStreamIsThePrefixAndTheStreamGoesOn) {
  testutil::TempDir dir;
  StreamedAnalyses unused;
  const RunModel run = loadSyntheticRun(dir.path() + "/run", unused);
  StreamedAnalyses live, prefix, whole;
  feed(run, 0, 0.4, live);
  feed(run, 0, 0.4, prefix);
  prefix.finish();
  const std::unique_ptr<StreamedAnalyses> snap = live.snapshot();
  const std::vector<BandwidthRow> rows = snap->bandwidth.rows(run);
  ASSERT_FALSE(rows.empty());
  expectSameBandwidth(rows, prefix.bandwidth.rows(run));
  expectSameMatrix(communicationMatrix(run, snap->shapes, snap->transfer_cells),
                   communicationMatrix(run, prefix.shapes, prefix.transfer_cells));
  const ClockAlignment clocks = alignClocks(run, snap->anchors);
  expectSameStragglers(rankStragglers(run, clocks, {snap->arrivals, snap->shapes, snap->transfer_cells, snap->lateness}),
                       rankStragglers(run, clocks, {prefix.arrivals, prefix.shapes, prefix.transfer_cells, prefix.lateness}), 0.01);
  EXPECT_EQ(snap->transfer_gaps.transfers(), prefix.transfer_gaps.transfers());
  EXPECT_LT(snap->transfer_gaps.transfers(), run.transfers.size());

  feed(run, 0.4, 1, live);
  live.finish();
  feed(run, 0, 1, whole);
  whole.finish();
  expectSameBandwidth(live.bandwidth.rows(run), whole.bandwidth.rows(run));
  const auto total = [](const std::vector<BandwidthRow>& r) {
    uint64_t n = 0;
    for (const BandwidthRow& row : r) n += row.count;
    return n;
  };
  EXPECT_GT(total(live.bandwidth.rows(run)), total(rows));
  expectSameMatrix(communicationMatrix(run, live.shapes, live.transfer_cells), communicationMatrix(run, whole.shapes, whole.transfer_cells));
  EXPECT_EQ(live.transfer_gaps.transfers(), run.transfers.size());
}

void expectSameMismatches(const std::vector<MismatchRow>& a, uint64_t a_total, const std::vector<MismatchRow>& b, uint64_t b_total) {
  EXPECT_EQ(a_total, b_total);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(std::tuple(a[i].comm, a[i].func, a[i].seq, a[i].kind, mismatchDetail(a[i])),
              std::tuple(b[i].comm, b[i].func, b[i].seq, b[i].kind, mismatchDetail(b[i]))) << i;
    EXPECT_EQ(a[i].missing_ranks, b[i].missing_ranks) << i;
  }
}

// A rank without a file leaves a seat empty in every instance of its communicators: the
// mismatch rows, kept from the stream, are those of the run replayed whole and of two shards.
TEST(StreamedAnalyses, MismatchesOfARankWithoutAFileAreTheSameFedAnyWay) {
  testutil::TempDir dir;
  StreamedAnalyses fed;
  const RunModel run = loadSyntheticRun(dir.path() + "/run", fed, true);
  uint64_t fed_total = 0, replayed_total = 0, sharded_total = 0;
  const std::vector<MismatchRow> rows = findMismatches(run, fed.gaps, fed.transfer_gaps, fed_total);
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows.front().kind, "file ends");
  const std::vector<MismatchRow> replayed = findMismatches(run, replayed_total);
  expectSameMismatches(rows, fed_total, replayed, replayed_total);

  CollGapTally shards[2];
  for (size_t i = 0; i < run.collectives.size(); ++i) {
    const CollInstance& c = run.collectives[i];
    shards[i % 2].collective(c, {run.membersOf(c), c.n_members});
  }
  shards[0].merge(shards[1]);
  TransferGapTally transfer_shards[2];
  for (size_t i = 0; i < run.transfers.size(); ++i) transfer_shards[i % 2].transfer(run.transfers[i]);
  transfer_shards[0].merge(transfer_shards[1]);
  const std::vector<MismatchRow> sharded = findMismatches(run, shards[0], transfer_shards[0], sharded_total);
  expectSameMismatches(rows, fed_total, sharded, sharded_total);
}

// Overlap follows each process alone, read back from its file on several threads: the same
// rows, steps and all, as from the run's ops held whole.
TEST(StreamedAnalyses, OverlapFromTheFilesEqualsOverlapFromTheRunHeldWhole) {
  testutil::TempDir dir;
  StreamedAnalyses fed;
  const RunModel run = loadSyntheticRun(dir.path() + "/run", fed);
  const std::vector<OverlapRow> whole = computeOverlap(run);
  const std::vector<OverlapRow> from_files = computeOverlap(run, {}, opsFromFiles(run), 3);
  ASSERT_EQ(whole.size(), run.processes.size());
  ASSERT_EQ(from_files.size(), whole.size());
  for (size_t p = 0; p < whole.size(); ++p) {
    const OverlapRow &a = whole[p], &b = from_files[p];
    EXPECT_EQ(std::tie(a.rank, a.available, a.reason, a.step_source, a.step_count),
              std::tie(b.rank, b.available, b.reason, b.step_source, b.step_count)) << p;
    EXPECT_EQ(a.step_source, "inferred") << p;
    EXPECT_GT(a.comm_us, 0) << p;
    EXPECT_DOUBLE_EQ(a.comm_us, b.comm_us) << p;
    EXPECT_DOUBLE_EQ(a.mean_step_us, b.mean_step_us) << p;
    ASSERT_EQ(a.steps.size(), b.steps.size()) << p;
    for (size_t s = 0; s < a.steps.size(); ++s) {
      EXPECT_EQ(std::tie(a.steps[s].step, a.steps[s].last_step), std::tie(b.steps[s].step, b.steps[s].last_step)) << p;
      EXPECT_DOUBLE_EQ(a.steps[s].start_us, b.steps[s].start_us) << p << " step " << s;
      EXPECT_DOUBLE_EQ(a.steps[s].comm_us, b.steps[s].comm_us) << p << " step " << s;
    }
  }
}

// The report's text without the sections root-cause attribution writes (findings, advice,
// stragglers): their figures depend on the order the ops came in (expectSameStragglers).
std::string withoutRootCauseSections(const std::string& text) {
  std::string out;
  std::istringstream in(text);
  bool skipping = false;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] != ' ')
      skipping = line.rfind("Findings", 0) == 0 || line.rfind("Advice", 0) == 0 || line.rfind("Stragglers", 0) == 0;
    if (!skipping) out += line + "\n";
  }
  return out;
}

// What `commtrace report` does (the collectives streamed, not kept; overlap from the files)
// prints the same report as the run held whole and replayed, and names the same culprits.
TEST(StreamedAnalyses, TheReportWithoutTheCollectivesKeptEqualsTheReportOverTheRunHeldWhole) {
  testutil::TempDir dir;
  StreamedAnalyses unused;
  const RunModel whole = loadSyntheticRun(dir.path() + "/run", unused);
  ASSERT_FALSE(whole.collectives.empty());
  const Report held = buildReport(whole, alignClocks(whole));
  std::ostringstream expected;
  writeText(held, expected);

  RunModel streamed_run;
  StreamedAnalyses streamed;
  std::ostringstream err;
  ASSERT_TRUE(loadRun({.paths = {dir.path() + "/run"}, .stream = &streamed, .keep_ops = false}, streamed_run, err)) << err.str();
  EXPECT_FALSE(streamed_run.ops_kept);
  EXPECT_TRUE(streamed_run.collectives.empty());
  EXPECT_TRUE(streamed_run.members.empty());
  // Plain sends and receives are streamed too; only the pieces of AlltoAll/Gather/Scatter
  // calls (none here) stay for grouping.
  ASSERT_FALSE(whole.transfers.empty());
  EXPECT_TRUE(streamed_run.transfers.empty());
  const Report from_files = buildReport(streamed_run, alignClocks(streamed_run, streamed.anchors), {}, streamed);
  std::ostringstream actual;
  writeText(from_files, actual);
  EXPECT_NE(expected.str().find("Straggler: rank"), std::string::npos);
  EXPECT_EQ(withoutRootCauseSections(actual.str()), withoutRootCauseSections(expected.str()));
  ASSERT_EQ(from_files.finding_details.size(), held.finding_details.size());
  for (size_t i = 0; i < held.finding_details.size(); ++i)
    EXPECT_EQ(std::tie(from_files.finding_details[i].kind, from_files.finding_details[i].subject),
              std::tie(held.finding_details[i].kind, held.finding_details[i].subject)) << i;
  expectSameStragglers(from_files.stragglers, held.stragglers, kOrderTolerance);
}

// The loader's threads decode the files in whatever order they get to them; the report of the
// same files is the same to the byte every time (it differed by a percent of a straggler's
// waiting caused when the threads' order chose the instances' order).
TEST(StreamedAnalyses, TheReportOfTheSameFilesIsTheSameEveryTime) {
  testutil::TempDir dir;
  StreamedAnalyses unused;
  loadSyntheticRun(dir.path() + "/run", unused);
  std::string first;
  for (int load = 0; load < 4; ++load) {
    RunModel run;
    StreamedAnalyses streamed;
    std::ostringstream err, json;
    ASSERT_TRUE(loadRun({.paths = {dir.path() + "/run"}, .stream = &streamed, .keep_ops = false}, run, err)) << err.str();
    writeJson(buildReport(run, alignClocks(run, streamed.anchors), {}, streamed), json);
    if (load == 0) first = json.str();
    else EXPECT_EQ(json.str(), first) << "load " << load;
  }
  EXPECT_NE(first.find("\"wait_caused_us\""), std::string::npos);
}

}  // namespace
}  // namespace commtrace::report
