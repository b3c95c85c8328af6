// The HTML report: one self-contained page (nothing it would fetch), the matrix and
// lateness heatmaps and the bandwidth plots as inline SVG, every text escaped.
#include "tools/report/output/html_report.h"

#include <gtest/gtest.h>

#include <sstream>

#include "tests/support/sample_report.h"
#include "tests/support/text_page_titles.h"
#include "tools/report/output/svg_charts.h"

namespace commtrace::report {
namespace {

std::string html(const Report& r) {
  std::ostringstream out;
  writeHtml(r, out);
  return out.str();
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Each rank's exposed communication per step, at most 100 columns: 300 steps make columns of
// 3, each the mean per step; a stretch counts whole in its first step's column.
TEST(HtmlReport, ExposedCommunicationPerStepOfEveryRank) {
  Report r = testutil::sampleReport();
  OverlapRow& row = r.overlap[0];
  row.steps.clear();
  for (int s = 0; s < 296; ++s) row.steps.push_back({.step = s, .last_step = s, .start_us = 0, .comm_us = 9, .overlapped_us = 0, .exposed_us = static_cast<double>(s)});
  row.steps.push_back({.step = 296, .last_step = 299, .start_us = 0, .comm_us = 9, .overlapped_us = 0, .exposed_us = 400});
  row.step_count = 300;
  const std::string page = html(r);
  EXPECT_NE(page.find("Exposed communication per step of each rank (mean over 3 steps a column)"), std::string::npos);
  EXPECT_NE(page.find("<title>rank 0, steps from 0: 1 us</title>"), std::string::npos);      // (0 + 1 + 2) / 3
  // Steps 294 and 295, and the stretch 296-299: (294 + 295 + 400) / 6; its column's
  // neighbour, steps 297-299, has nothing.
  EXPECT_NE(page.find("<title>rank 0, steps from 294: 165 us</title>"), std::string::npos);
  EXPECT_NE(page.find("<title>rank 0, steps from 297: no data</title>"), std::string::npos);
  EXPECT_EQ(count(page, "<title>rank 1, steps from"), 0u) << "rank 1 has no compute records";
}

TEST(HtmlReport, FetchesNothing) {
  const std::string page = html(testutil::sampleReport());
  ASSERT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  for (const char* ref : {"http://", "https://", "<script src", "<link", "@import", "url(", "<img", "<iframe"})
    EXPECT_EQ(page.find(ref), std::string::npos) << ref;
}

TEST(HtmlReport, DrawsTheMatrixAndLatenessHeatmapsAndOneBandwidthPlotPerFunc) {
  const std::string page = html(testutil::sampleReport());
  // matrix, lateness, AllReduce and AllGather plots (Broadcast has no bandwidth), overlap bars
  // per rank, exposed communication per step, and bars per step of the most exposed rank
  // (the sample has no step timeline).
  EXPECT_EQ(count(page, "<svg"), 2u + 2u + 3u);
  EXPECT_NE(page.find("<title>rank 0, step 1: 750 us</title>"), std::string::npos);
  EXPECT_NE(page.find(">GPU time per rank, from its first to its last communication kernel</text>"), std::string::npos);
  EXPECT_NE(page.find("<title>sender rank 2, receiver rank 3: 1 MiB</title>"), std::string::npos);
  EXPECT_NE(page.find("<title>rank 2, time +2 ms: 1.3 ms</title>"), std::string::npos);
  EXPECT_NE(page.find("<title>rank 1, time +2 ms: no data</title>"), std::string::npos);
  EXPECT_NE(page.find(">AllReduce</text>"), std::string::npos);
  EXPECT_NE(page.find(">AllGather</text>"), std::string::npos);
  EXPECT_EQ(count(page, "<circle"), 3u);  // one point per bandwidth row with a bandwidth
  EXPECT_EQ(count(page, "<title>sender rank"), 16u);
}

// Past 128 ranks the matrix draws consecutive ranks as one cell, their bytes summed, so that
// the page of a big run stays small; the JSON and CSV keep every pair.
TEST(HtmlReport, ABigRunsMatrixGroupsConsecutiveRanks) {
  Report r = testutil::sampleReport();
  r.matrix.ranks = 300;  // drawn from the "all" slice's cells: a run this big has no dense grid
  r.matrix.dense = false;
  r.matrix.bytes.clear();
  r.matrix.slices = {{"all", 0, "", {{4, 7, 1u << 20, 0, 4, 262.1, false}, {5, 8, 1u << 20, 0, 4, 262.1, false}}}};  // one cell: 3-5 to 6-8
  const std::string page = html(r);
  EXPECT_EQ(count(page, "<title>sender rank"), 100u * 100u);
  EXPECT_NE(page.find("<title>sender rank 3-5, receiver rank 6-8: 2 MiB</title>"), std::string::npos);
  EXPECT_NE(page.find("3 consecutive ranks to a cell"), std::string::npos);
}

// busBw over time: one heatmap row per communicator and func.
// What to do comes right after what was found (it was section 16 of 18, after the kernel
// tables), and the four kernel tables say which is which.
TEST(HtmlReport, AdviceFollowsTheFindingsAndKernelTablesHaveCaptions) {
  Report r = testutil::sampleReport();
  r.advice = {{"check_link", "0-1", "check the path between ranks 0 and 1", "best 2 GB/s"}};
  const std::string page = html(r);
  EXPECT_NE(page.find("<li>Check the path between ranks 0 and 1. Because: best 2 GB/s.</li>"), std::string::npos);
  const size_t findings = page.find("id=\"findings\""), advice = page.find("id=\"advice\""), run = page.find("id=\"run\"");
  ASSERT_NE(advice, std::string::npos);
  EXPECT_LT(findings, advice);
  EXPECT_LT(advice, run);
  EXPECT_NE(page.find("<h3>Per rank: kernels by number of launches</h3>"), std::string::npos);
}

TEST(HtmlReport, DrawsBandwidthOverTime) {
  Report r = testutil::sampleReport();
  r.bandwidth_series = {.axis = "aligned time", .start_us = 0, .bin_us = 2000,
                        .rows = {{.comm = 1, .comm_name = "world", .func = "AllReduce", .ops = {3, 0}, .busbw_gbs = {12.5, -1}}}};
  const std::string page = html(r);
  EXPECT_NE(page.find("<title>comm/func world AllReduce, time 0: 12.50 GB/s</title>"), std::string::npos);
  EXPECT_NE(page.find("<title>comm/func world AllReduce, time +2 ms: no data</title>"), std::string::npos);
}

// A 16,384-rank run's page stays a few MB: past 128 ranks the lateness rows are groups of
// consecutive ranks, each cell the largest of its ranks' (one late rank still shows).
TEST(HtmlReport, ABigRunsLatenessIsGroupedSoThatALateRankStillShows) {
  Report r = testutil::sampleReport();
  LatenessHeatmap& lh = r.stragglers.heatmap;
  lh.ranks.clear();
  lh.mean_lateness_us.clear();
  for (int rank = 0; rank < 300; ++rank) {
    lh.ranks.push_back(rank);
    lh.mean_lateness_us.push_back({rank == 151 ? 5000.0 : 10.0, -1});
  }
  const std::string page = html(r);
  EXPECT_EQ(count(page, ", time +1 ms: "), 100u) << "100 rows of 3 ranks";
  EXPECT_NE(page.find("each row the largest of 3 consecutive ranks'"), std::string::npos);
  EXPECT_NE(page.find("<title>rank 150-152, time 0: 5 ms</title>"), std::string::npos);
  EXPECT_NE(page.find("<title>rank 0-2, time 0: 10 us</title>"), std::string::npos);
  EXPECT_NE(page.find("<title>rank 0-2, time +1 ms: no data</title>"), std::string::npos);
}

// Past 128 series, those that got slow: the series whose slowest column is the smallest
// share of its own median.
TEST(HtmlReport, ABigRunsBandwidthOverTimeShowsTheSeriesThatGotSlow) {
  Report r = testutil::sampleReport();
  r.bandwidth_series = {.axis = "aligned time", .start_us = 0, .bin_us = 2000, .rows = {}};
  for (uint64_t c = 0; c < 200; ++c)
    r.bandwidth_series.rows.push_back({.comm = c + 1, .comm_name = "c" + std::to_string(c), .func = "AllReduce", .ops = {1, 1, 1},
                                       .busbw_gbs = {10, c == 177 ? 1.0 : 9.0 + static_cast<double>(c % 3), 10}});
  const std::string page = html(r);
  EXPECT_EQ(count(page, "<title>comm/func "), 128u * 3) << "128 rows of 3 columns";
  EXPECT_NE(page.find("the 128 of 200 series whose slowest column fell furthest below their own median"), std::string::npos);
  EXPECT_NE(page.find("<title>comm/func c177 AllReduce, time +2 ms: 1.00 GB/s</title>"), std::string::npos);
}

// A table stops at its 1,000th row on the page and says where the rest is.
TEST(HtmlReport, ABigRunsTablesStopAtATousandRows) {
  Report r = testutil::sampleReport();
  r.stragglers.ranks.resize(1500, r.stragglers.ranks.front());
  const std::string page = html(r);
  const size_t at = page.find("id=\"stragglers\"");
  ASSERT_NE(at, std::string::npos);
  EXPECT_NE(page.find("500 more rows: --format json or csv for all", at), std::string::npos);
}

// The run's problems, a line each, stop at the 1,000th too.
TEST(HtmlReport, ABigRunsProblemsStopAtATousandLines) {
  Report r = testutil::sampleReport();
  r.run.problems.assign(1200, "rank 7: damaged chunk");
  const std::string page = html(r);
  EXPECT_EQ(count(page, "<li><code>rank 7: damaged chunk</code></li>"), 1000u);
  EXPECT_NE(page.find("200 more: --format json or csv for all"), std::string::npos);
}

// Past 128 ranks with compute records, the bars are the 128 with most exposed communication.
TEST(HtmlReport, ABigRunsGpuTimeBarsAreTheMostExposedRanks) {
  Report r = testutil::sampleReport();
  const OverlapRow base = r.overlap[0];
  r.overlap.clear();
  for (int rank = 0; rank < 200; ++rank) {
    OverlapRow o = base;
    o.rank = rank;
    o.exposed_us = rank < 72 ? 1.0 : 1000.0 + rank;  // ranks 72-199 expose most
    r.overlap.push_back(o);
  }
  const std::string page = html(r);
  EXPECT_NE(page.find("(the 128 of 200 ranks with most exposed communication)"), std::string::npos);
  EXPECT_NE(page.find(">rank 72<"), std::string::npos);
  EXPECT_EQ(page.find(">rank 71<"), std::string::npos);
}

TEST(HtmlReport, HasTheFindingsAndTables) {
  const std::string page = html(testutil::sampleReport());
  EXPECT_NE(page.find("<li>Rank 2 (node1) is the straggler"), std::string::npos);
  for (const char* heading : {"Bandwidth", "Stragglers", "Links", "Overlap", "Mismatches and hangs (1)", "Communicators (2)", "Clocks"})
    EXPECT_NE(page.find("\">" + std::string(heading) + " <a class=\"anchor\""), std::string::npos) << heading;
  EXPECT_NE(page.find("no compute-kernel records: CUPTI was not attached"), std::string::npos);
}

// A contents list links every section by an id that does not change with the run's numbers.
TEST(HtmlReport, ContentsLinkEverySectionByAStableId) {
  const std::string page = html(testutil::sampleReport());
  const size_t nav = page.find("<nav class=\"toc\">"), body = page.find("<h2 ");
  ASSERT_NE(nav, std::string::npos);
  EXPECT_LT(nav, body) << "the contents come before the first section";
  EXPECT_EQ(count(page, "<h2 id=\""), count(page.substr(nav, body - nav), "<li><a href=\"#"));
  for (const char* id : {"findings", "run", "matrix", "lateness", "bandwidth-plots", "bandwidth-series", "bandwidth", "stragglers", "links", "overlap",
                         "cuda-sync", "mismatches", "communicators", "clocks"}) {
    EXPECT_NE(page.find("<h2 id=\"" + std::string(id) + "\">"), std::string::npos) << id;
    EXPECT_NE(page.find("<li><a href=\"#" + std::string(id) + "\">"), std::string::npos) << id;
  }
  EXPECT_NE(page.find("<li><a href=\"#mismatches\">Mismatches and hangs (1)</a></li>"), std::string::npos);
}

// Both pages iterate one list of sections (report_sections.h): every section the terminal
// shows is on the HTML page too, in the same order; the HTML page adds its charts.
TEST(HtmlReport, ShowsTheTextReportsSectionsInTheSameOrder) {
  Report r = testutil::sampleReport();
  r.advice = {{"check_link", "0-1", "check the path between ranks 0 and 1", "best 2 GB/s"}};
  const std::string page = html(r);
  const std::vector<std::string> titles = testutil::textPageTitles(r);
  size_t at = page.find("</nav>");  // in the body, not the contents list
  for (const std::string& title : titles) {
    const size_t found = page.find(">" + svg::escape(title), at);
    ASSERT_NE(found, std::string::npos) << "\"" << title << "\" is not on the HTML page after the previous section";
    at = found;
  }
  EXPECT_GE(titles.size(), 15u);
}

TEST(HtmlReport, EscapesEveryText) {
  const std::string page = html(testutil::sampleReport());
  EXPECT_EQ(page.find("<b>&x</b>"), std::string::npos);
  EXPECT_NE(page.find("tp,&quot;0&quot;\n&lt;b&gt;&amp;x&lt;/b&gt;"), std::string::npos);
}

}  // namespace
}  // namespace commtrace::report
