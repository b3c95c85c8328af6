// The Perfetto export on a hand-built run, spelt as trace-event JSON (which the tests read
// most easily; perfetto_proto_test.cc reads the protobuf): one process per rank
// and one track per stream (a second one where slices on a stream overlap), ops as slices
// with their fields as args, times on the aligned timeline or, unaligned, from the rank's
// first op with a label saying so.
#include "tools/report/output/perfetto_export.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/support/run_model_builder.h"

namespace commtrace::report {
namespace {

using nlohmann::json;
using testutil::RunModelBuilder;
constexpr uint64_t kBase = 1'790'000'000'000'000'000ull;
constexpr double kSkewUs = 3217.4;  // rank 1's GPU clock runs this far ahead of rank 0's

uint64_t at(double us) { return kBase + static_cast<uint64_t>(us * 1000); }
uint64_t ahead(double us) { return at(us + kSkewUs); }

// Rank 0 on host a, rank 1 on host b. An AllReduce that rank 1 joins 40 us late; a send
// each way, rank 0's two overlapping on its stream; one compute kernel on rank 0.
RunModelBuilder twoRanks() {
  RunModelBuilder b({"a", "b"});
  const uint32_t world = b.comm({0, 1}, "world");
  b.run.comms[world].id = 0xfeed;
  b.coll(world, "AllReduce", 4 << 20, {{at(0), at(100)}, {ahead(40), ahead(100)}});
  b.p2p(world, "Send", 0, 1, 1 << 20, {at(150), at(170)}, {ahead(150), ahead(170)});
  b.p2p(world, "Send", 1, 0, 1 << 20, {ahead(160), ahead(180)}, {at(160), at(180)});
  b.run.timelines[0] = {.compute = {{at(10), at(50)}}, .has_kernel_records = true};
  return b;
}

ClockAlignment alignment(bool rank1_aligned) {
  ClockAlignment a;
  a.ref_from_gpu = {{1.0, 0.0, true}, {1.0, -kSkewUs * 1000, rank1_aligned}};
  return a;
}

json exported(const RunModel& run, const ClockAlignment& clocks, PerfettoStats* stats = nullptr, ExportFilter filter = {}) {
  std::ostringstream out;
  const PerfettoStats s = writePerfettoTrace(run, clocks, {.encoding = TraceEncoding::kJson, .filter = std::move(filter)}, out);
  if (stats != nullptr) *stats = s;
  return json::parse(out.str());
}

std::vector<json> events(const json& trace, const std::string& ph, int pid = -1) {
  std::vector<json> out;
  for (const json& e : trace.at("traceEvents"))
    if (e.at("ph") == ph && (pid < 0 || e.at("pid") == pid)) out.push_back(e);
  return out;
}

const json* slice(const json& trace, int pid, const std::string& name) {
  for (const json& e : trace.at("traceEvents"))
    if (e.at("ph") == "X" && e.at("pid") == pid && e.at("name") == name) return &e;
  return nullptr;
}

std::string threadName(const json& trace, int pid, int tid) {
  for (const json& e : events(trace, "M", pid))
    if (e.at("name") == "thread_name" && e.at("tid") == tid) return e.at("args").at("name");
  return "";
}

TEST(PerfettoExport, OneProcessPerRankNamedWithItsHost) {
  RunModelBuilder b = twoRanks();
  b.run.processes[1].host = "b\"\\\n\x01";  // quote, backslash, line break, control character: escaped
  const json trace = exported(b.run, alignment(true));
  std::map<int, std::string> names;
  for (const json& e : events(trace, "M"))
    if (e.at("name") == "process_name") names[e.at("pid")] = e.at("args").at("name");
  EXPECT_EQ(names, (std::map<int, std::string>{{0, "rank 0 (a)"}, {1, "rank 1 (b\"\\\n\x01)"}}));
}

// Names are the traced program's bytes: what is not UTF-8 (a stray byte, an overlong form,
// a surrogate, a sequence cut short) becomes U+FFFD, and the export stays valid JSON; UTF-8
// itself passes as it is.
TEST(PerfettoExport, NamesThatAreNotUtf8BecomeReplacementCharacters) {
  RunModelBuilder b = twoRanks();
  b.run.processes[1].host = "b\xff\xc3\xa9\xc0\xaf\xed\xa0\x80\xf0\x9f\x98\x80\xe2\x82";
  const json trace = exported(b.run, alignment(true));
  std::string name;
  for (const json& e : events(trace, "M", 1))
    if (e.at("name") == "process_name") name = e.at("args").at("name");
  const std::string fffd = "\xef\xbf\xbd";
  EXPECT_EQ(name, "rank 1 (b" + fffd + "\xc3\xa9" + fffd + fffd + fffd + fffd + fffd + "\xf0\x9f\x98\x80" + fffd + fffd + ")");
}

TEST(PerfettoExport, OpsAreSlicesWithTheirFieldsAsArgs) {
  PerfettoStats stats;
  const json trace = exported(twoRanks().run, alignment(true), &stats);
  EXPECT_EQ(events(trace, "X", 0).size(), 4u);  // AllReduce, Send, Recv, compute
  EXPECT_EQ(events(trace, "X", 1).size(), 3u);
  EXPECT_EQ(stats.slices, 7u);
  const json* ar = slice(trace, 1, "AllReduce");
  ASSERT_NE(ar, nullptr);
  const json& args = ar->at("args");
  EXPECT_EQ(args.at("comm"), "0x000000000000feed");
  EXPECT_EQ(args.at("comm_name"), "world");
  EXPECT_EQ(args.at("seq"), 0);
  EXPECT_EQ(args.at("bytes"), 4 << 20);
  EXPECT_EQ(args.at("algo"), "RING");
  EXPECT_EQ(args.at("proto"), "SIMPLE");
  EXPECT_EQ(args.at("channels"), 2);
  EXPECT_NEAR(args.at("transfer_us").get<double>(), 60, 1e-3);  // the last arriver's duration
  EXPECT_NEAR(args.at("busbw_gbs").get<double>(), (4 << 20) / 60e3 * 1.0, 1e-2);  // AllReduce over 2 ranks: factor 2(n-1)/n = 1
  EXPECT_NEAR(slice(trace, 0, "AllReduce")->at("args").at("wait_us").get<double>(), 40, 1e-3);
  const json* send = slice(trace, 0, "Send");
  ASSERT_NE(send, nullptr);
  EXPECT_EQ(send->at("args").at("peer"), 1);
  EXPECT_EQ(send->at("args").at("bytes"), 1 << 20);
  EXPECT_EQ(send->at("cat"), "p2p");
}

TEST(PerfettoExport, AlignedTimesPutTheCollectiveEndTogether) {
  const json trace = exported(twoRanks().run, alignment(true));
  const json* ar0 = slice(trace, 0, "AllReduce");
  const json* ar1 = slice(trace, 1, "AllReduce");
  ASSERT_TRUE(ar0 && ar1);
  EXPECT_NEAR(ar0->at("ts").get<double>(), 0, 1e-3);
  EXPECT_NEAR(ar1->at("ts").get<double>(), 40, 0.3);  // a map near 1.8e18 ns moves in 256 ns steps
  EXPECT_NEAR(ar1->at("dur").get<double>(), 60, 1e-3);
  EXPECT_NEAR(ar0->at("ts").get<double>() + ar0->at("dur").get<double>(), ar1->at("ts").get<double>() + ar1->at("dur").get<double>(), 0.3);
  EXPECT_NE(trace.at("otherData").at("timeline").get<std::string>().find("aligned"), std::string::npos);
}

TEST(PerfettoExport, UnalignedRankCountsFromItsFirstOpAndSaysSo) {
  PerfettoStats stats;
  const json trace = exported(twoRanks().run, alignment(false), &stats);
  EXPECT_EQ(stats.processes_not_aligned, 1);
  EXPECT_NEAR(slice(trace, 1, "AllReduce")->at("ts").get<double>(), 0, 1e-3);
  EXPECT_NEAR(slice(trace, 1, "Recv")->at("ts").get<double>(), 110, 1e-3);
  bool labelled = false;
  for (const json& e : events(trace, "M", 1))
    labelled |= e.at("name") == "process_labels" && e.at("args").at("labels").get<std::string>().find("not aligned") != std::string::npos;
  EXPECT_TRUE(labelled);
  EXPECT_NE(trace.at("otherData").at("timeline").get<std::string>().find("1 processes not aligned"), std::string::npos);
}

// Time 0 is the run's earliest event, a compute kernel before the first op included: no
// negative times (Perfetto's protobuf timestamps cannot be).
TEST(PerfettoExport, TimeZeroIsTheEarliestEvent) {
  RunModelBuilder b = twoRanks();
  b.run.timelines[1] = {.compute = {{ahead(-25), ahead(-5)}}, .has_kernel_records = true};
  const json trace = exported(b.run, alignment(true));
  EXPECT_NEAR(slice(trace, 1, "compute")->at("ts").get<double>(), 0, 0.3);
  EXPECT_NEAR(slice(trace, 0, "AllReduce")->at("ts").get<double>(), 25, 0.3);
  const json unaligned = exported(b.run, alignment(false));
  EXPECT_NEAR(slice(unaligned, 1, "compute")->at("ts").get<double>(), 0, 1e-3);
  EXPECT_NEAR(slice(unaligned, 1, "AllReduce")->at("ts").get<double>(), 65, 1e-3);
}

TEST(PerfettoExport, RanksFilterKeepsOnlyThoseProcesses) {
  PerfettoStats stats;
  const json trace = exported(twoRanks().run, alignment(true), &stats, {.ranks = {1}});
  EXPECT_TRUE(events(trace, "X", 0).empty());
  EXPECT_TRUE(events(trace, "M", 0).empty()) << "a process with nothing kept is not named";
  EXPECT_EQ(events(trace, "X", 1).size(), 3u);
  EXPECT_EQ(stats.processes, 1);
  EXPECT_EQ(stats.slices, 3u);
}

TEST(PerfettoExport, TimeWindowKeepsSlicesOverlappingIt) {
  PerfettoStats stats;
  // [120 us, 165 us): the sends at [150, 170) and [160, 180) on both ranks; not the AllReduce
  // (ends at 100) nor the compute kernel (ends at 50).
  const json trace = exported(twoRanks().run, alignment(true), &stats, {.from_ns = 120'000, .to_ns = 165'000});
  std::multiset<std::string> names;
  for (const json& e : events(trace, "X")) names.insert(e.at("name"));
  EXPECT_EQ(names, (std::multiset<std::string>{"Send", "Send", "Recv", "Recv"}));
  EXPECT_EQ(stats.slices_filtered_out, 3u);
}

// Steps as the overlap table finds them: here the op sequence AllReduce, Send repeats.
TEST(PerfettoExport, StepFilterKeepsEachRanksChosenSteps) {
  RunModelBuilder b({"a", "b"});
  const uint32_t world = b.comm({0, 1}, "world");
  for (int step = 0; step < 4; ++step) {
    const double t = 1000.0 * step;
    b.coll(world, "AllReduce", 1 << 20, {{at(t), at(t + 100)}, {at(t), at(t + 100)}});
    b.p2p(world, "Send", 0, 1, 1 << 10, {at(t + 200), at(t + 210)}, {at(t + 200), at(t + 210)});
  }
  ClockAlignment clocks;
  clocks.ref_from_gpu = {{1.0, 0.0, true}, {1.0, 0.0, true}};
  PerfettoStats stats;
  const json trace = exported(b.run, clocks, &stats, {.steps = std::pair{1, 2}});
  std::vector<double> starts;
  for (const json& e : events(trace, "X", 0)) starts.push_back(e.at("ts").get<double>());
  std::sort(starts.begin(), starts.end());
  EXPECT_EQ(starts, (std::vector<double>{1000, 1200, 2000, 2200}));
  EXPECT_EQ(stats.processes_without_steps, 0);

  const json none = exported(b.run, clocks, &stats, {.steps = std::pair{7, 9}});
  EXPECT_TRUE(events(none, "X").empty());
  EXPECT_EQ(stats.processes_without_steps, 2);
}

TEST(PerfettoExport, ComputeKernelsAreNamedOnTheirCudaStreams) {
  RunModelBuilder b = twoRanks();
  b.run.timelines[0].compute = {{at(10), at(50), b.run.names.intern("ampere_sgemm_128x64_nn"), 7},
                                {at(60), at(80), b.run.names.intern("flash_fwd_kernel"), 13}};
  const json trace = exported(b.run, alignment(true));
  const json* gemm = slice(trace, 0, "ampere_sgemm_128x64_nn");
  const json* flash = slice(trace, 0, "flash_fwd_kernel");
  ASSERT_TRUE(gemm && flash);
  EXPECT_EQ(threadName(trace, 0, gemm->at("tid")), "compute kernels, CUDA stream 7");
  EXPECT_EQ(threadName(trace, 0, flash->at("tid")), "compute kernels, CUDA stream 13");
}

TEST(PerfettoExport, TracksPerStreamWithOverlapsOnTheirOwnTrack) {
  const json trace = exported(twoRanks().run, alignment(true));
  const json* send = slice(trace, 0, "Send");
  const json* recv = slice(trace, 0, "Recv");
  const json* compute = slice(trace, 0, "compute");
  ASSERT_TRUE(send && recv && compute);
  EXPECT_EQ(threadName(trace, 0, send->at("tid")), "stream 0x0000000000007f00");
  EXPECT_EQ(threadName(trace, 0, slice(trace, 0, "AllReduce")->at("tid")), "stream 0x0000000000007f00");
  EXPECT_NE(send->at("tid"), recv->at("tid"));  // [150, 170) and [160, 180) do not nest
  EXPECT_EQ(threadName(trace, 0, recv->at("tid")), "stream 0x0000000000007f00 (overlap 1)");
  EXPECT_EQ(threadName(trace, 0, compute->at("tid")), "compute kernels, CUDA stream 0");
}

// Perfetto draws a track's slices only if they nest: back-to-back ops on a drifting clock must
// still touch rather than overlap by a rounding nanosecond.
TEST(PerfettoExport, SlicesOfATrackNestAfterMappingAndPrinting) {
  RunModelBuilder b({"a"});
  const uint32_t solo = b.comm({0}, "solo");
  for (int i = 0; i < 200; ++i) b.coll(solo, "AllReduce", 1 << 20, {{at(i * 10.0007), at((i + 1) * 10.0007)}});
  ClockAlignment clocks;
  clocks.ref_from_gpu = {{1.0000065, -12345.678, true}};
  const json trace = exported(b.run, clocks);
  std::map<int, std::vector<std::pair<int64_t, int64_t>>> tracks;  // tid -> [start, end) in ns as printed
  for (const json& e : events(trace, "X")) {
    const auto ns = [](const json& v) { return std::llround(v.get<double>() * 1000); };
    tracks[e.at("tid")].push_back({ns(e.at("ts")), ns(e.at("ts")) + ns(e.at("dur"))});
  }
  ASSERT_EQ(tracks.size(), 1u);
  auto& slices = tracks.begin()->second;
  ASSERT_EQ(slices.size(), 200u);
  std::sort(slices.begin(), slices.end());
  for (size_t i = 1; i < slices.size(); ++i) EXPECT_LE(slices[i - 1].second, slices[i].first) << i;
}

TEST(PerfettoExport, OpsWithoutGpuTimesAreCountedNotDrawn) {
  RunModelBuilder b = twoRanks();
  b.p2p(0, "Send", 0, 1, 64, {0, 0}, {0, 0});  // NCCL 2.27 (v4) p2p: no GPU times
  PerfettoStats stats;
  const json trace = exported(b.run, alignment(true), &stats);
  EXPECT_EQ(stats.slices, 7u);
  EXPECT_EQ(stats.ops_without_gpu_times, 2u);
  EXPECT_EQ(trace.at("otherData").at("ops_without_gpu_times"), 2);
}

// The pieces of an AlltoAll run together: each takes its call's transfer time, as the
// matrix does, not its own span, which includes waiting for the call's late rank (rank 0
// here, 90 us late: the call moved its bytes in 10 us).
TEST(PerfettoExport, AlltoAllPiecesTakeTheirCallsTransferTime) {
  RunModelBuilder b({"a", "a", "a"});
  const uint32_t world = b.comm({0, 1, 2}, "world");
  b.alltoall(world, 1 << 20, {{at(90), at(100)}, {at(0), at(100)}, {at(0), at(100)}});
  ClockAlignment clocks;
  clocks.ref_from_gpu = {{1.0, 0.0, true}, {1.0, 0.0, true}, {1.0, 0.0, true}};
  const json trace = exported(b.run, clocks);
  size_t pieces = 0;
  for (const json& e : events(trace, "X")) {
    const json& args = e.at("args");
    if (!args.contains("api_func") || args.at("api_func") != "AlltoAll") continue;
    ++pieces;
    EXPECT_NEAR(args.at("transfer_us").get<double>(), 10.0, 1e-9) << e.dump();
  }
  EXPECT_EQ(pieces, 12u) << "6 pieces, each drawn on its sender and its receiver";
}

TEST(PerfettoExport, UnwritablePathIsReported) {
  std::ostringstream err;
  EXPECT_FALSE(exportPerfetto(twoRanks().run, alignment(true), {}, "/nonexistent-dir/trace.json", err));
  EXPECT_EQ(err.str().rfind("commtrace: /nonexistent-dir/trace.json: ", 0), 0u) << err.str();
}

}  // namespace
}  // namespace commtrace::report
