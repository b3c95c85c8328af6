// Many producers against one flusher: every record a producer made is either in the file,
// in order, or counted as a ring_full drop in the file's DropSummary records.
//
// COMMTRACE_TEST_RECORDS_PER_PRODUCER sets the records per producer (default 1000000,
// a few seconds even under ThreadSanitizer); raise it for a longer soak.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <latch>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ringbuffer/ringbuffer.h"
#include "sink/flusher.h"
#include "sink/reader.h"
#include "tests/support/temp_dir.h"

namespace commtrace {
namespace {

constexpr int kProducers = 8;
constexpr uint64_t kCommId = 0xc0ffee;  // marks the producers' records

uint64_t recordsPerProducer() {
  const char* env = std::getenv("COMMTRACE_TEST_RECORDS_PER_PRODUCER");
  if (env == nullptr || env[0] == '\0') return 1000000;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(env, &end, 10);
  if (*end != '\0' || n == 0) {
    ADD_FAILURE() << "COMMTRACE_TEST_RECORDS_PER_PRODUCER=" << env << " is not a positive number";
    return 1000000;
  }
  return n;
}

// Plain record() calls, no retry: a full ring drops, as in production.
void produce(int producer, uint64_t records) {
  for (uint64_t seq = 0; seq < records; ++seq) {
    P2pRecord r{};
    r.comm_id = kCommId;
    r.op_index = seq;
    r.peer = producer;
    record(r);
  }
}

// What the file says about one producer.
struct ProducerTally {
  uint32_t tid = 0;
  uint64_t read = 0;
  int64_t last_seq = -1;
  uint64_t out_of_order = 0;
};

struct FileTally {
  std::vector<ProducerTally> producers = std::vector<ProducerTally>(kProducers);
  std::map<std::pair<uint32_t, RecordKind>, uint64_t> ring_full;  // max cumulative per (tid, kind)
  uint64_t sink_failed = 0;
  uint64_t records = 0;  // every record in the file, of any kind
  uint64_t foreign_tids = 0;  // producer records whose thread stamp changed mid-file
};

void tallyRecord(const RecordSlot& slot, FileTally& tally) {
  ++tally.records;
  if (slot.kind == RecordKind::kDropSummary) {
    const DropSummaryRecord& d = slot.payload.drop_summary;
    uint64_t& max = tally.ring_full[{d.thread, static_cast<RecordKind>(d.dropped_kind)}];
    max = std::max(max, d.ring_full);
    tally.sink_failed += d.sink_failed;
    return;
  }
  if (slot.kind != RecordKind::kP2p || slot.payload.p2p.comm_id != kCommId) return;
  const P2pRecord& r = slot.payload.p2p;
  ASSERT_GE(r.peer, 0);
  ASSERT_LT(r.peer, kProducers);
  ProducerTally& p = tally.producers[static_cast<size_t>(r.peer)];
  if (p.read == 0) p.tid = slot.thread;
  if (slot.thread != p.tid) ++tally.foreign_tids;
  if (static_cast<int64_t>(r.op_index) <= p.last_seq) ++p.out_of_order;
  p.last_seq = static_cast<int64_t>(r.op_index);
  ++p.read;
}

FileTally readTrace(const std::string& path) {
  FileTally tally;
  TraceReader reader;
  std::string error;
  EXPECT_TRUE(reader.open(path, error)) << error;
  DecodedChunk chunk;
  while (reader.next(chunk)) {
    for (const RecordSlot& slot : chunk.records) tallyRecord(slot, tally);
  }
  for (const ReadIssue& issue : reader.issues()) ADD_FAILURE() << issue.message;
  EXPECT_FALSE(reader.tornTail());
  return tally;
}

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(ConcurrencyTest, EveryRecordIsWrittenInOrderOrCountedAsDropped) {
  const uint64_t per_producer = recordsPerProducer();
  testutil::TempDir dir;
  FlusherOptions options;
  options.dir = dir.path();
  Flusher flusher(options);
  ASSERT_TRUE(flusher.start());

  const auto start = std::chrono::steady_clock::now();
  std::vector<uint32_t> tids(kProducers);
  std::latch all_running(kProducers);  // all alive at once: distinct tids, real contention
  std::vector<std::thread> producers;
  for (int i = 0; i < kProducers; ++i) {
    producers.emplace_back([&, i] {
      tids[i] = static_cast<uint32_t>(gettid());
      all_running.arrive_and_wait();
      produce(i, per_producer);
    });
  }
  for (std::thread& t : producers) t.join();
  const double produce_s = secondsSince(start);
  flusher.stop();
  const double stop_s = secondsSince(start);

  const FileTally tally = readTrace(flusher.path());
  const FlusherStats stats = flusher.stats();
  std::cout << kProducers << " x " << per_producer << " records: produced in " << produce_s << " s, flushed by "
            << stop_s << " s, read back by " << secondsSince(start) << " s; " << stats.records_written
            << " records in the file\n";

  EXPECT_EQ(tally.records, stats.records_written) << "the file holds what the flusher says it wrote";
  EXPECT_EQ(stats.sinkFailedTotal(), 0u);
  EXPECT_EQ(tally.sink_failed, 0u);
  EXPECT_EQ(tally.foreign_tids, 0u);
  for (int i = 0; i < kProducers; ++i) {
    const ProducerTally& p = tally.producers[i];
    SCOPED_TRACE("producer " + std::to_string(i));
    ASSERT_GT(p.read, 0u) << "an empty ring takes at least its first records";
    EXPECT_EQ(p.tid, tids[i]) << "records carry their producer's tid";
    const auto drops = tally.ring_full.find({tids[i], RecordKind::kP2p});
    const uint64_t dropped = drops == tally.ring_full.end() ? 0 : drops->second;
    EXPECT_EQ(p.read + dropped, per_producer) << p.read << " read, " << dropped << " dropped";
    EXPECT_EQ(p.out_of_order, 0u) << "sequence numbers must rise strictly in file order";
  }
}

}  // namespace
}  // namespace commtrace
