// The JSON report: parses, names its schema, and carries every field issue #4 requires
// with the right types and the Report's values (ids as hex strings, row = sender, unknown
// overlap figures left out rather than zero, stragglers by wait caused).
#include "tools/report/output/json_report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/support/sample_report.h"
#include "tools/report/output/json_parts.h"

namespace commtrace::report {
namespace {

nlohmann::json reportJson(const Report& r) {
  std::ostringstream out;
  writeJson(r, out);
  return nlohmann::json::parse(out.str());
}

std::string laidOut(const json::Json& value) {
  std::ostringstream out;
  json::writeLaidOut(out, value, 0);
  return out.str();
}

// The document is written a field and an array element at a time; what comes out is
// byte for byte what the same document laid out whole would be, empty arrays and objects
// included.
TEST(JsonReport, WrittenPieceByPieceAsOneDocumentWouldBe) {
  for (const Report& r : {testutil::sampleReport(), Report{}}) {
    std::ostringstream out;
    writeJson(r, out);
    EXPECT_EQ(out.str(), laidOut(json::Json::parse(out.str())) + "\n");
  }
}

// A row (an array of scalars, or such an object in an array) takes one line; a row holding a
// sentence, an object that is a field's value, or anything nested, a member a line.
TEST(JsonReport, RowsOfScalarsTakeOneLineEach) {
  const std::string sentence(81, 's');
  const auto doc = json::Json::parse(R"({"rows": [{"a": 1, "b": "x", "c": null, "d": []}, [1.5, 2]], "text": [")" + sentence + R"(", 1], "empty": {}, "section": {"a": 1}})");
  EXPECT_EQ(laidOut(doc), "{\n"
                          "  \"rows\": [\n"
                          "    {\"a\": 1, \"b\": \"x\", \"c\": null, \"d\": []},\n"
                          "    [1.5, 2]\n"
                          "  ],\n"
                          "  \"text\": [\n"
                          "    \"" + sentence + "\",\n"
                          "    1\n"
                          "  ],\n"
                          "  \"empty\": {},\n"
                          "  \"section\": {\n"
                          "    \"a\": 1\n"
                          "  }\n"
                          "}");
}

TEST(JsonReport, NamesItsSchemaAndSummarisesTheRun) {
  const nlohmann::json j = reportJson(testutil::sampleReport());
  EXPECT_EQ(j.at("schema"), "commtrace.report.v1");
  const nlohmann::json& run = j.at("run");
  for (const char* key : {"ranks", "processes", "hosts", "communicators", "ops", "dropped_records", "files", "damaged_files"})
    EXPECT_TRUE(run.at(key).is_number_integer()) << key;
  EXPECT_EQ(run.at("ranks"), 4);
  EXPECT_EQ(run.at("ops"), 130);
  EXPECT_EQ(run.at("dropped_records"), 3);
  EXPECT_EQ(run.at("files"), 5);
  EXPECT_EQ(run.at("damaged_files"), 1);
  EXPECT_EQ(run.at("problems").size(), 1u);
  EXPECT_EQ(j.at("findings").size(), 2u);
}

TEST(JsonReport, CommunicatorsHaveHexIdsAndGlobalRanks) {
  const nlohmann::json comms = reportJson(testutil::sampleReport()).at("communicators");
  ASSERT_EQ(comms.size(), 2u);
  EXPECT_EQ(comms[0].at("id"), "0x1234abcd5678ef00");
  EXPECT_EQ(comms[0].at("size"), 4);
  EXPECT_EQ(comms[0].at("ranks"), nlohmann::json::array({0, 1, 2, 3}));
  EXPECT_EQ(comms[0].at("name"), "world");
  EXPECT_EQ(comms[1].at("name"), testutil::kTrickyName);  // survives escaping
}

TEST(JsonReport, BandwidthRowsCarryTheRequiredFields) {
  const nlohmann::json bw = reportJson(testutil::sampleReport()).at("bandwidth");
  ASSERT_EQ(bw.size(), 4u);
  const nlohmann::json& row = bw[0];
  EXPECT_EQ(row.at("comm"), "0x1234abcd5678ef00");
  EXPECT_EQ(row.at("func"), "AllReduce");
  EXPECT_EQ(row.at("bytes"), 4u << 20);
  EXPECT_EQ(row.at("algo"), "RING");
  EXPECT_EQ(row.at("proto"), "SIMPLE");
  EXPECT_EQ(row.at("count"), 60);
  EXPECT_DOUBLE_EQ(row.at("time_us_p50").get<double>(), 350.5);
  EXPECT_DOUBLE_EQ(row.at("algbw_gbs_p50").get<double>(), 11.97);
  EXPECT_DOUBLE_EQ(row.at("busbw_gbs_p50").get<double>(), 17.95);
  EXPECT_TRUE(row.at("no_bandwidth").is_null());
  EXPECT_DOUBLE_EQ(row.at("percentile_error").get<double>(), 0.01) << "its percentiles come from a sketch";
  EXPECT_EQ(bw[1].at("percentile_error"), 0) << "exact";
  const nlohmann::json& unsized = bw[3];  // counted and timed, but no size: no bandwidth, and null rather than 0
  EXPECT_DOUBLE_EQ(unsized.at("time_us_p50").get<double>(), 9);
  EXPECT_TRUE(unsized.at("algbw_gbs_p50").is_null());
  EXPECT_TRUE(unsized.at("busbw_gbs_p50").is_null());
  EXPECT_EQ(unsized.at("no_bandwidth"), "size not recorded (datatype Unknown)");
}

TEST(JsonReport, MatrixRowsAreSenders) {
  const nlohmann::json m = reportJson(testutil::sampleReport()).at("matrix");
  EXPECT_EQ(m.at("ranks"), 4);
  EXPECT_EQ(m.at("bytes")[2][3], 1u << 20);  // rank 2 sent 1 MiB to rank 3
  EXPECT_EQ(m.at("bytes")[3][2], 0);
  EXPECT_EQ(m.at("p2p_bytes")[0][3], 7);
  EXPECT_EQ(m.at("slices")[0].at("cells")[0].at("measured"), false);
}

// Past kMaxDenseRanks there are no grids: null, and the cells in the slices.
TEST(JsonReport, ABigRunsMatrixIsItsSlicesAlone) {
  Report r = testutil::sampleReport();
  r.matrix.ranks = 16384;
  r.matrix.dense = false;
  r.matrix.bytes.clear();
  r.matrix.p2p_bytes.clear();
  r.matrix.time_us.clear();
  const nlohmann::json m = reportJson(r).at("matrix");
  EXPECT_TRUE(m.at("bytes").is_null());
  EXPECT_TRUE(m.at("p2p_bytes").is_null());
  EXPECT_TRUE(m.at("time_us").is_null());
  EXPECT_EQ(m.at("slices")[0].at("cells").size(), 2u);
}

// Past 1,024 ranks the JSON keeps the per-step overlap of the 64 ranks with most exposed
// communication only; up to 1,024, every rank's.
TEST(JsonReport, AWideRunKeepsTheStepsOfTheMostExposedRanksOnly) {
  for (const int ranks : {1024, 1100}) {
    Report r = testutil::sampleReport();
    const OverlapRow row = r.overlap.front();
    r.overlap.clear();
    for (int rank = 0; rank < ranks; ++rank) {
      r.overlap.push_back(row);
      r.overlap.back().rank = rank;
      r.overlap.back().exposed_us = (rank * 7919) % ranks;  // a permutation: the largest are scattered
    }
    const nlohmann::json overlap = reportJson(r).at("overlap");
    ASSERT_EQ(overlap.size(), static_cast<size_t>(ranks));
    size_t with_steps = 0;
    for (const nlohmann::json& o : overlap) {
      if (o.at("steps").empty()) continue;
      ++with_steps;
      EXPECT_EQ(o.at("steps").size(), 2u);
      if (ranks > 1024) EXPECT_GE(o.at("exposed_us").get<double>(), ranks - 64) << o.at("rank");
    }
    EXPECT_EQ(with_steps, ranks > 1024 ? 64u : static_cast<size_t>(ranks));
  }
}

// Past 1,024 ranks the lateness heatmap's rows are groups of consecutive ranks, each cell the
// largest of the group's (a bin none of them had stays null), at most 1,024 rows.
TEST(JsonReport, AWideRunsLatenessRowsAreGroupsOfRanksEachCellTheLargest) {
  Report r = testutil::sampleReport();
  LatenessHeatmap& h = r.stragglers.heatmap;
  h.ranks.clear();
  h.mean_lateness_us.clear();
  for (int rank = 0; rank < 2050; ++rank) {
    h.ranks.push_back(rank);
    h.mean_lateness_us.push_back({static_cast<double>(rank % 5), -1, rank == 7 ? 900.0 : -1});
  }
  const nlohmann::json heat = reportJson(r).at("lateness_heatmap");
  EXPECT_EQ(heat.at("ranks_per_row"), 3);
  const nlohmann::json& rows = heat.at("mean_lateness_us");
  ASSERT_EQ(rows.size(), 684u);  // 2050 / 3, rounded up
  EXPECT_EQ(heat.at("ranks").size(), 684u);
  EXPECT_EQ(heat.at("ranks")[2], 6) << "each row's first rank";
  EXPECT_EQ(rows[0][0], 2.0) << "ranks 0-2: the largest of 0, 1, 2";
  EXPECT_EQ(rows[1][0], 4.0) << "ranks 3-5: the largest of 3, 4, 0";
  EXPECT_TRUE(rows[1][1].is_null()) << "a bin no rank of the group had";
  EXPECT_EQ(rows[2][2], 900.0) << "one late rank shows in its group";
  EXPECT_TRUE(rows[3][2].is_null());
  EXPECT_EQ(rows[683][0], 4.0) << "the last group, ranks 2049 alone";
}

// Past 1,024 ranks the matrix keeps the 64 per-communicator slices that moved most bytes, and
// in every slice the 1,024 heaviest cells, in their order; the totals say what was left out.
TEST(JsonReport, AWideRunsMatrixKeepsTheHeaviestSlicesAndCells) {
  Report r = testutil::sampleReport();
  r.matrix.ranks = 16384;
  r.matrix.dense = false;
  r.matrix.slices.clear();
  MatrixSlice all{"all", 0, "", {}};
  for (int i = 0; i < 2000; ++i) all.cells.push_back({i, i + 1, static_cast<uint64_t>((i * 7919) % 2000), 0, 1, 1, false});
  r.matrix.slices.push_back(all);
  for (uint64_t c = 1; c <= 100; ++c) r.matrix.slices.push_back({"comm", c, "", {{0, 1, (c * 37) % 101, 0, 1, 1, false}}});
  const nlohmann::json m = reportJson(r).at("matrix");
  EXPECT_EQ(m.at("slices_total"), 101);
  const nlohmann::json& slices = m.at("slices");
  ASSERT_EQ(slices.size(), 65u);
  EXPECT_EQ(slices[0].at("label"), "all");
  EXPECT_EQ(slices[0].at("cells_total"), 2000);
  const nlohmann::json& cells = slices[0].at("cells");
  ASSERT_EQ(cells.size(), 1024u);
  for (size_t i = 0; i < cells.size(); ++i) {
    EXPECT_GE(cells[i].at("bytes").get<uint64_t>(), 2000u - 1024u) << i;
    if (i > 0) EXPECT_LT(cells[i - 1].at("src").get<int>(), cells[i].at("src").get<int>()) << "in their order";
  }
  for (size_t s = 1; s < slices.size(); ++s) {
    const uint64_t bytes = slices[s].at("cells")[0].at("bytes");
    EXPECT_GE(bytes, 101u - 64u) << "one of the 64 heaviest communicators";
  }
}

// Up to 1,024 ranks nothing is left out: every slice, every cell.
TEST(JsonReport, ANarrowRunsMatrixIsWhole) {
  const Report r = testutil::sampleReport();
  const nlohmann::json m = reportJson(r).at("matrix");
  EXPECT_EQ(m.at("slices").size(), r.matrix.slices.size());
  EXPECT_EQ(m.at("slices_total"), r.matrix.slices.size());
  EXPECT_EQ(m.at("slices")[0].at("cells").size(), m.at("slices")[0].at("cells_total").get<size_t>());
}

TEST(JsonReport, OverlapWithoutComputeRecordsGivesTheReasonNotZeros) {
  const nlohmann::json overlap = reportJson(testutil::sampleReport()).at("overlap");
  ASSERT_EQ(overlap.size(), 2u);
  const nlohmann::json& measured = overlap[0];
  EXPECT_EQ(measured.at("rank"), 0);
  EXPECT_EQ(measured.at("available"), true);
  for (const char* key : {"comm_us", "overlapped_us", "exposed_us", "overlap_pct"}) EXPECT_TRUE(measured.at(key).is_number()) << key;
  EXPECT_DOUBLE_EQ(measured.at("overlap_pct").get<double>(), 25);
  EXPECT_EQ(measured.at("steps").size(), 2u);
  EXPECT_DOUBLE_EQ(measured.at("steps")[1].at("start_us").get<double>(), 5000);

  const nlohmann::json& unmeasured = overlap[1];
  EXPECT_EQ(unmeasured.at("available"), false);
  EXPECT_EQ(unmeasured.at("reason"), "no compute-kernel records: CUPTI was not attached");
  EXPECT_DOUBLE_EQ(unmeasured.at("comm_us").get<double>(), 1800);
  for (const char* key : {"overlapped_us", "exposed_us", "idle_us", "overlap_pct"}) EXPECT_FALSE(unmeasured.contains(key)) << key;
}

TEST(JsonReport, CudaSyncPerCallWithHexStreams) {
  const nlohmann::json rows = reportJson(testutil::sampleReport()).at("cuda_sync");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].at("rank"), 0);
  EXPECT_EQ(rows[0].at("host"), "node0");
  EXPECT_DOUBLE_EQ(rows[0].at("blocked_us").get<double>(), 2600.5);
  const nlohmann::json& sync = rows[0].at("calls")[0];
  EXPECT_EQ(sync.at("call"), "cudaStreamSynchronize");
  EXPECT_EQ(sync.at("count"), 3);
  EXPECT_EQ(sync.at("failed"), 1);
  EXPECT_DOUBLE_EQ(sync.at("total_us").get<double>(), 2500.5);
  EXPECT_DOUBLE_EQ(sync.at("p50_us").get<double>(), 800);
  EXPECT_DOUBLE_EQ(sync.at("max_us").get<double>(), 1200.25);
  ASSERT_EQ(sync.at("streams").size(), 2u);
  EXPECT_EQ(sync.at("streams")[0].at("stream"), "0x000000000005a000");
  EXPECT_EQ(sync.at("streams")[1].at("stream"), "0x0000000000000002");
  EXPECT_EQ(sync.at("streams")[1].at("failed"), 1);
  const nlohmann::json& device = rows[0].at("calls")[1];
  EXPECT_EQ(device.at("call"), "cudaDeviceSynchronize");
  EXPECT_TRUE(device.at("streams").empty());
}

TEST(JsonReport, StragglersSortedByWaitCausedDescending) {
  const nlohmann::json s = reportJson(testutil::sampleReport()).at("stragglers");
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].at("rank"), 2);
  EXPECT_EQ(s[1].at("rank"), 1);
  EXPECT_EQ(s[2].at("rank"), 0);
  EXPECT_EQ(s[0].at("host"), "node1");
  EXPECT_DOUBLE_EQ(s[0].at("wait_caused_us").get<double>(), 12000.5);
  EXPECT_DOUBLE_EQ(s[0].at("late_fraction").get<double>(), 0.9);
  EXPECT_DOUBLE_EQ(s[0].at("mean_lateness_us").get<double>(), 1200);
  EXPECT_EQ(s[0].at("class"), "compute");
  EXPECT_DOUBLE_EQ(s[0].at("confidence").get<double>(), 0.95);
}

TEST(JsonReport, MismatchesLinksClocksAndHeatmap) {
  const nlohmann::json j = reportJson(testutil::sampleReport());
  const nlohmann::json& m = j.at("mismatches").at(0);
  EXPECT_EQ(m.at("comm"), "0x1234abcd5678ef00");
  EXPECT_EQ(m.at("func"), "AllReduce");
  EXPECT_EQ(m.at("seq"), 57);
  EXPECT_EQ(m.at("missing_ranks"), nlohmann::json::array({3}));
  EXPECT_EQ(m.at("comm_ranks"), false);
  EXPECT_EQ(m.at("kind"), "missing");
  EXPECT_EQ(j.at("mismatches_total"), 1);
  EXPECT_EQ(j.at("links").at(0).at("flagged"), true);
  EXPECT_EQ(j.at("clocks").at("fits").size(), 4u);
  EXPECT_EQ(j.at("clocks").at("fits")[3].at("aligned"), false);
  const nlohmann::json& heat = j.at("lateness_heatmap");
  EXPECT_DOUBLE_EQ(heat.at("mean_lateness_us")[2][2].get<double>(), 1300);
  EXPECT_TRUE(heat.at("mean_lateness_us")[1][2].is_null());  // a bin without data
  EXPECT_EQ(heat.at("axis"), "aligned time");
  EXPECT_DOUBLE_EQ(heat.at("bin_us").get<double>(), 1000);
  EXPECT_TRUE(heat.at("bin_ops").is_null());
}

TEST(JsonReport, BytesThatAreNotUtf8DoNotBreakTheDocument) {
  Report r = testutil::sampleReport();
  r.stragglers.ranks[0].host = "bad\xff\xfehost";
  EXPECT_NO_THROW(reportJson(r));
}

}  // namespace
}  // namespace commtrace::report
