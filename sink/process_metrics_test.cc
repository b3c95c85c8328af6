// A process's own metrics file (COMMTRACE_PROM_DIR): what its records add up to, in
// Prometheus' text format; bounded label sets; written whole through a rename; and, through a
// running flusher, the file there while the process records and gone when it stops.
#include "sink/process_metrics.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "ringbuffer/ring_registry.h"
#include "sink/flusher.h"
#include "tests/support/sink_test_support.h"

namespace commtrace {
namespace {

using testing::TempDir;

RecordSlot commInfo(uint64_t id, const char* name, int32_t n_ranks, int32_t global_rank) {
  RecordSlot s{};
  s.kind = RecordKind::kCommInfo;
  s.payload.comm_info = {.comm_id = id, .cpu_ns = 1, .comm_name = StringTable::global().intern(name), .n_nodes = 1,
                         .n_ranks = n_ranks, .rank = 0, .global_rank = global_rank, .cuda_device = 0};
  return s;
}

RecordSlot allReduce(uint64_t comm, uint64_t bytes, uint64_t gpu_ns, const char* func = "AllReduce") {
  RecordSlot s{};
  s.kind = RecordKind::kColl;
  CollRecord& c = s.payload.coll;
  c.comm_id = comm;
  c.bytes = bytes;
  c.gpu_start_ns = 1'000'000;
  c.gpu_end_ns = 1'000'000 + gpu_ns;
  c.func = StringTable::global().intern(func);
  c.algo = StringTable::global().intern("RING");
  c.proto = StringTable::global().intern("SIMPLE");
  return s;
}

// The value of the one sample whose line starts with `prefix` (NaN if none or several).
double valueOf(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  double value = std::nan("");
  int found = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) != 0) continue;
    value = std::stod(line.substr(line.rfind(' ') + 1));
    ++found;
  }
  return found == 1 ? value : std::nan("");
}

TEST(ProcessMetrics, AddsUpTheProcessesOwnRecords) {
  ProcessMetrics m(StringTable::global(), -1);
  m.add(commInfo(0xD0, "dp", 8, 3));
  for (int i = 0; i < 3; ++i) m.add(allReduce(0xD0, 4u << 20, 1'000'000));
  m.add(allReduce(0xD0, 1024, 50'000));  // another size class
  RecordSlot stuck{};
  stuck.kind = RecordKind::kInFlight;
  stuck.payload.in_flight = {.comm_id = 0xD0, .op_index = 9, .seq = 9, .cpu_start_ns = 2'000'000'000, .cpu_seen_ns = 0,
                             .func = StringTable::global().intern("AllReduce"), .peer = -1, .in_flight = 1};
  m.add(stuck);
  RecordSlot drops{};
  drops.kind = RecordKind::kDropSummary;
  drops.payload.drop_summary = {.ring_full = 7, .sink_failed = 0, .cpu_ns = 1, .thread = 42, .dropped_kind = 1, .untracked = 0};
  m.add(drops);
  drops.payload.drop_summary.ring_full = 9;  // cumulative: the later count replaces the earlier
  m.add(drops);
  m.setDigestDropped(5);
  const std::string text = m.text(/*now_ns=*/4'500'000'000);
  const std::string big = R"(rank="3",comm="dp",comm_id="0x00000000000000d0",func="AllReduce",size="1MiB-16MiB",algo="RING",proto="SIMPLE"})";
  EXPECT_EQ(valueOf(text, "commtrace_process_ops_total{" + big), 3) << text;
  EXPECT_DOUBLE_EQ(valueOf(text, "commtrace_process_bus_bytes_total{" + big), 3.0 * (4u << 20) * 2 * 7 / 8) << text;
  EXPECT_DOUBLE_EQ(valueOf(text, "commtrace_process_op_gpu_seconds_total{" + big), 0.003) << text;
  EXPECT_EQ(valueOf(text, R"(commtrace_process_ops_total{rank="3",comm="dp",comm_id="0x00000000000000d0",func="AllReduce",size="<64KiB")"), 1);
  EXPECT_DOUBLE_EQ(valueOf(text, R"(commtrace_process_in_flight_seconds{rank="3",comm="dp",comm_id="0x00000000000000d0",func="AllReduce"})"), 2.5);
  EXPECT_EQ(valueOf(text, R"(commtrace_process_dropped_records_total{rank="3",where="ring_full"})"), 9);
  EXPECT_EQ(valueOf(text, R"(commtrace_process_dropped_records_total{rank="3",where="digest"})"), 5);

  stuck.payload.in_flight.in_flight = 0;  // it went on
  m.add(stuck);
  EXPECT_EQ(m.text(5'000'000'000).find("commtrace_process_in_flight_seconds{"), std::string::npos);
}

TEST(ProcessMetrics, LabelSetsStayBounded) {
  ProcessMetrics m(StringTable::global(), 0);
  for (uint64_t comm = 1; comm <= 1000; ++comm) m.add(allReduce(comm, 1024, 1000));
  const std::string text = m.text(0);
  size_t series = 0;
  for (size_t at = 0; (at = text.find("\ncommtrace_process_ops_total{", at + 1)) != std::string::npos;) ++series;
  EXPECT_EQ(series, ProcessMetrics::kMaxOpClasses + 1) << "the classes past the limit count under func=\"other\"";
  EXPECT_EQ(valueOf(text, R"(commtrace_process_ops_total{rank="0",comm="",comm_id="0x0000000000000000",func="other")"),
            1000 - ProcessMetrics::kMaxOpClasses);
}

// A flusher that drains every 20 ms and writes its metrics file into dir every 50 ms.
FlusherOptions writingMetricsInto(const TempDir& dir) {
  FlusherOptions options;
  options.dir = dir.path() + "/run";
  options.flush_period_ms = 20;
  options.prom_dir = dir.path();
  options.prom_period_ms = 50;
  return options;
}

TEST(ProcessMetrics, ARunningFlusherKeepsTheFileWhileItRecordsAndRemovesItAtStop) {
  TempDir dir;
  Flusher flusher(writingMetricsInto(dir));
  ASSERT_TRUE(flusher.start());
  CollRecord r = allReduce(0xAB, 1 << 20, 100'000).payload.coll;
  record(r);
  const std::string path = dir.path() + "/commtrace-pid" + std::to_string(getpid()) + ".prom";
  std::string text;
  for (int tries = 0; tries < 200 && text.find("commtrace_process_ops_total{") == std::string::npos; ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::ifstream in(path);
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  EXPECT_NE(text.find(R"(func="AllReduce",size="1MiB-16MiB",algo="RING",proto="SIMPLE"} 1)"), std::string::npos) << text;
  ASSERT_TRUE(flusher.stop());
  EXPECT_FALSE(std::filesystem::exists(path)) << "a stopped process's counters would read as a rank that stopped working";
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

// A closing flush (what exit, exec and SIGTERM/SIGINT/SIGHUP ask for) removes the file too:
// a job terminated during a hang left its ranks' files with an op frozen in flight. A
// process that goes on after it (its SIGINT handled) writes it again.
TEST(ProcessMetrics, AClosingFlushRemovesTheFile) {
  TempDir dir;
  Flusher flusher(writingMetricsInto(dir));
  ASSERT_TRUE(flusher.start());
  record(allReduce(0xAB, 1 << 20, 100'000).payload.coll);
  const std::string path = dir.path() + "/commtrace-pid" + std::to_string(getpid()) + ".prom";
  const auto appears = [&] {
    for (int tries = 0; tries < 200 && !std::filesystem::exists(path); ++tries) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return std::filesystem::exists(path);
  };
  ASSERT_TRUE(appears());
  ASSERT_TRUE(RingRegistry::global().flushAndWait(5000, /*closing=*/true));
  EXPECT_FALSE(std::filesystem::exists(path)) << "left behind after the process stopped recording";
  EXPECT_TRUE(appears()) << "the process went on: its file comes back";
  ASSERT_TRUE(flusher.stop());
}

TEST(ProcessMetrics, AnUnwritableDirectoryCostsOneLineAndNothingElse) {
  TempDir dir;
  FlusherOptions options;
  options.dir = dir.path() + "/run";
  options.flush_period_ms = 20;
  options.prom_dir = dir.path() + "/no/such/dir";
  options.prom_period_ms = 50;
  Flusher flusher(options);
  ::testing::internal::CaptureStderr();
  ASSERT_TRUE(flusher.start());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_TRUE(flusher.stop());
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err, "commtrace: cannot write " + options.prom_dir + "/commtrace-pid" + std::to_string(getpid()) +
                     ".prom (No such file or directory); this process writes no metrics file\n");
  EXPECT_EQ(testing::traceFilesIn(options.dir).size(), 1u) << "the trace is written as ever";
}

}  // namespace
}  // namespace commtrace
