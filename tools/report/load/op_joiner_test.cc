// OpJoiner hands an instance on the moment its last seat is filled and holds only what is
// still open; read in step (readInLockstep), a run's open instances stay a window of it.
#include "tools/report/load/op_joiner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "tests/support/open_descriptors.h"
#include "tests/support/report_load_support.h"
#include "tests/support/temp_dir.h"
#include "tools/report/load/lockstep_reader.h"
#include "tools/synthetic/run_writer.h"

namespace commtrace::report {
namespace {

constexpr uint64_t kComm = 0xC0FFEE;

// Counts what the joiner hands on, and how many instances it held open at most.
class CountingSink : public JoinedOpSink {
 public:
  void collective(const CollInstance& c, std::span<const MemberView> members) override {
    ++collectives;
    if (std::all_of(members.begin(), members.end(), [](const MemberView& m) { return m.process >= 0; })) ++whole;
    last_seq = c.seq;
  }
  void transfer(const P2pTransfer&) override { ++transfers; }
  void finish() override { finished = true; }

  uint64_t collectives = 0, whole = 0, transfers = 0, last_seq = 0;
  bool finished = false;
};

RecordBatch batchOf(int process, int comm_rank, uint64_t first_seq, uint64_t n, bool with_info) {
  RecordBatch b;
  b.process = process;
  if (with_info) b.comm_infos.push_back({kComm, 0, 2, comm_rank, process, 1});
  for (uint64_t s = first_seq; s < first_seq + n; ++s) {
    CollRow row;
    row.comm_id = kComm;
    row.seq = s;
    row.op_index = s;
    row.func = 1;
    row.view.process = process;
    row.view.cpu_end_ns = 1000 + s;
    b.colls.push_back(row);
  }
  return b;
}

TEST(OpJoiner, HandsOnEachInstanceWhenItsLastSeatIsFilled) {
  RunModel run;
  run.names.intern("AllReduce");
  run.processes.resize(2);
  CountingSink sink;
  OpJoiner joiner(run, {{0, 0}, {1, 0}}, sink);
  joiner.add(batchOf(0, 0, 0, 10, true));
  EXPECT_EQ(joiner.openCollectives(), 10u);
  EXPECT_EQ(sink.collectives, 0u);
  joiner.add(batchOf(1, 1, 0, 4, true));
  EXPECT_EQ(sink.collectives, 4u) << "the instances both ranks recorded, at once";
  EXPECT_EQ(sink.whole, 4u);
  EXPECT_EQ(joiner.openCollectives(), 6u);
  joiner.add(batchOf(1, 1, 2, 1, false));  // rank 1's seq 2 again: a repeat, not a new instance
  EXPECT_EQ(joiner.openCollectives(), 6u);
  joiner.finish();
  EXPECT_TRUE(sink.finished);
  EXPECT_EQ(sink.collectives, 10u) << "what never became whole is handed on at the end";
  EXPECT_EQ(sink.whole, 4u);
  ASSERT_EQ(run.processes[1].issues.size(), 1u);
  EXPECT_NE(run.processes[1].issues[0].find("1 op records repeat one already read"), std::string::npos)
      << run.processes[1].issues[0];
}

// A communicator's number is the order the joiner first saw it in, and stays its number: the
// ops handed on before finish() name the communicator that RunModel::comms holds there after.
TEST(OpJoiner, NumbersCommunicatorsAsFirstSeenAndNeverRenumbers) {
  RunModel run;
  run.names.intern("AllReduce");
  run.processes.resize(2);
  struct IdSink : JoinedOpSink {
    explicit IdSink(const RunModel& r) : run(r) {}
    void collective(const CollInstance& c, std::span<const MemberView>) override { seen.emplace_back(c.comm, run.comms[c.comm].id); }
    void transfer(const P2pTransfer&) override {}
    const RunModel& run;
    std::vector<std::pair<uint32_t, uint64_t>> seen;  // (number, id) as handed on
  } sink(run);
  OpJoiner joiner(run, {{0, 0}, {1, 0}}, sink);
  const uint64_t ids[] = {0xF000, 0x0A00, 0x5000};  // not in id order
  for (int p = 0; p < 2; ++p) {
    RecordBatch b;
    b.process = p;
    for (uint64_t id : ids) b.comm_infos.push_back({id, 0, 2, p, p, 1});
    for (uint64_t id : ids) {
      CollRow row;
      row.comm_id = id;
      row.func = 1;
      row.view.process = p;
      row.view.cpu_end_ns = 1000;
      b.colls.push_back(row);
    }
    joiner.add(b);
  }
  ASSERT_EQ(sink.seen.size(), 3u);
  joiner.finish();
  ASSERT_EQ(run.comms.size(), 3u);
  for (size_t c = 0; c < 3; ++c) EXPECT_EQ(run.comms[c].id, ids[c]) << "numbered in the order first seen";
  for (const auto& [number, id] : sink.seen) EXPECT_EQ(run.comms[number].id, id) << "a number handed on still names its communicator";
}

// A record's numbers are whatever its bytes say: a global rank of 2^31-1 (the matrix's size
// overflowed and the report crashed), a world or a communicator of 2^30 members, are not
// believed: unknown, and each file says how many it had. A rank past every communicator
// read is (the files may be a few ranks of a larger job).
TEST(OpJoiner, RanksAndSizesPastAnyJobAreNotBelieved) {
  RunModel run;
  run.names.intern("AllReduce");
  run.processes.resize(2);
  run.processes[0].world_size = INT32_MAX;  // as a file header said
  run.processes[1].rank = 1 << 30;
  CountingSink sink;
  OpJoiner joiner(run, {{0, 0}, {1, 0}}, sink);
  RecordBatch first = batchOf(0, 0, 0, 3, false), second = batchOf(1, 1, 0, 3, false);
  first.comm_infos.push_back({kComm, 0, 2, 0, INT32_MAX, 1});
  second.comm_infos.push_back({kComm, 0, 2, 1, 65535, 1});
  second.comm_infos.push_back({kComm + 1, 0, 1 << 30, 1, 1, 1});
  joiner.add(first);
  joiner.add(second);
  joiner.finish();
  EXPECT_EQ(sink.whole, 3u) << "the ops are joined as before";
  EXPECT_EQ(run.world_size, 2);
  ASSERT_EQ(run.comms.size(), 1u) << "the communicator of 2^30 members is not made";
  EXPECT_EQ(run.comms[0].global_ranks, (std::vector<int>{0, 65535}));
  EXPECT_EQ(run.processes[0].rank, 0) << "its seat in a communicator as large as the world, as without a rank";
  EXPECT_EQ(run.processes[1].rank, 65535) << "its comm info's, the header's past any job";
  for (const ProcessInfo& p : run.processes) {
    ASSERT_EQ(p.issues.size(), 1u);
    EXPECT_NE(p.issues[0].find("not believed"), std::string::npos) << p.issues[0];
  }
}

// A DDP-shaped run of 8 ranks whose files hold 16,384 records a chunk: read in step, the
// joiner never holds more than about two chunks' instances; read one file after another,
// it holds every instance until the last file.
uint64_t mostOpenWhileReading(const std::string& dir, size_t max_open_files, uint64_t& handed_on, bool count_leads = true) {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  std::vector<ProcessIdentity> identities(files.size());
  RunModel run;
  run.processes.resize(files.size());
  CountingSink sink;
  OpJoiner joiner(run, identities, sink);
  SharedNames names(run.names);
  FileLeads leads(files.size());
  if (count_leads) joiner.countLeadsIn(&leads);
  uint64_t most = 0;
  readInLockstep(
      files, names, ProcessReadOptions{}, 2, max_open_files,
      [&](LoadMessage& message) {
        if (auto* batch = std::get_if<RecordBatch>(&message)) joiner.add(*batch);
        most = std::max(most, joiner.openCollectives());
      },
      count_leads ? &leads : nullptr);
  joiner.countLeadsIn(nullptr);
  joiner.finish();
  handed_on = sink.collectives;
  EXPECT_EQ(sink.whole, sink.collectives);
  return most;
}

TEST(OpJoiner, FilesReadInStepKeepTheOpenInstancesAWindowOfTheRun) {
  testutil::TempDir dir;
  synthetic::SyntheticRunOptions options;
  options.dir = dir.path() + "/run";
  options.shape = synthetic::JobShape::kDdp;
  options.ranks = 8;
  options.collectives_per_rank = 100'000;
  synthetic::SyntheticRunTruth truth;
  std::string error;
  ASSERT_TRUE(synthetic::writeSyntheticRun(options, truth, error)) << error;

  uint64_t handed_on = 0;
  const uint64_t in_step = mostOpenWhileReading(options.dir, 64, handed_on);
  EXPECT_EQ(handed_on, 100'000u);
  EXPECT_LE(in_step, 2u * 16'384u) << "about two chunks of instances";
  const uint64_t one_descriptor = mostOpenWhileReading(options.dir, 1, handed_on);
  EXPECT_EQ(handed_on, 100'000u);
  EXPECT_EQ(one_descriptor, in_step) << "with one descriptor for eight files, still in step";
}

// More files than descriptors: the files are delivered in the order they are with
// descriptors to spare, batch for batch, so every figure of the report is the same, and no
// more descriptors than the budget are held. (They were read a budget's worth after another,
// and a 1,024-file run under 200 descriptors named other figures for its straggler.)
TEST(OpJoiner, MoreFilesThanDescriptorsAreReadInTheSameOrder) {
  testutil::TempDir dir;
  synthetic::SyntheticRunOptions options;
  options.dir = dir.path() + "/run";
  options.ranks = 24;
  options.collectives_per_rank = 3000;
  synthetic::SyntheticRunTruth truth;
  std::string error;
  ASSERT_TRUE(synthetic::writeSyntheticRun(options, truth, error)) << error;
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(options.dir)) files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  const auto delivered = [&](size_t max_open, size_t& most_held) {
    RunModel run;
    SharedNames names(run.names);
    std::vector<std::tuple<int, size_t, uint64_t>> order;  // (process, rows, position)
    size_t batches = 0;
    most_held = 0;
    readInLockstep(files, names, ProcessReadOptions{}, 2, max_open, [&](LoadMessage& message) {
      const auto* batch = std::get_if<RecordBatch>(&message);
      if (batch == nullptr) return;
      order.emplace_back(batch->process, batch->colls.size() + batch->p2ps.size(), batch->position_ns);
      if (++batches % 7 == 0) most_held = std::max(most_held, testutil::descriptorsInto(options.dir));
    });
    return order;
  };
  size_t spare_held = 0, pooled_held = 0;
  const auto with_spare = delivered(64, spare_held);
  const auto pooled = delivered(4, pooled_held);
  ASSERT_GT(with_spare.size(), 24u * 3);
  EXPECT_EQ(pooled, with_spare);
  EXPECT_GT(spare_held, 4u) << "with descriptors to spare every file keeps its own";
  EXPECT_LE(pooled_held, 4u);
}

// Four ranks of one communicator, 20,000 AllReduces each in chunks of 500, whose CPU clocks
// do not run alike: ranks 2 and 3 take 3 us of CPU time an op, ranks 0 and 1 one (ranks
// played unsynchronized, as the NCCL driver plays them unpaced). By time alone, ranks 0
// and 1 are read 3 ops for every op of the others, and the joiner held two thirds of the
// run open; kept in step by their leads in ops, a window of it.
TEST(OpJoiner, FilesWhoseClocksRunApartAreKeptInStepByOps) {
  testutil::TempDir dir;
  constexpr int kRanks = 4;
  constexpr uint64_t kOps = 20'000, kChunk = 500;
  for (int rank = 0; rank < kRanks; ++rank) {
    std::vector<std::vector<RecordSlot>> chunks(1, {testing::commInfo(kComm, kRanks, rank, rank)});
    const uint64_t cpu_ns_per_op = rank < 2 ? 1000 : 3000;
    for (uint64_t op = 0; op < kOps; ++op) {
      if (chunks.back().size() >= kChunk) chunks.emplace_back();
      RecordSlot slot = testing::coll({.comm_id = kComm, .seq = op, .op_index = op});
      slot.payload.coll.cpu_start_ns = 1'000'000 + op * cpu_ns_per_op;
      slot.payload.coll.cpu_end_ns = slot.payload.coll.cpu_start_ns + 500;
      chunks.back().push_back(slot);
    }
    testing::writeRankFile(dir.path(), "rank" + std::to_string(rank), testing::rankHeader(rank, kRanks), chunks);
  }
  uint64_t handed_on = 0;
  const uint64_t by_time = mostOpenWhileReading(dir.path(), 64, handed_on, /*count_leads=*/false);
  EXPECT_EQ(handed_on, kOps);
  EXPECT_GT(by_time, kOps / 2) << "by time alone the files drift apart";
  const uint64_t in_step = mostOpenWhileReading(dir.path(), 64, handed_on);
  EXPECT_EQ(handed_on, kOps);
  EXPECT_LT(in_step, 4096u + 4 * kChunk) << "held to the lead that holds a file back, and a chunk of each";
}

// What the joiner is given, message by message, and what it hands on, op by op.
struct Delivery {
  std::vector<std::tuple<int, uint64_t, size_t>> messages;  // (process, position, rows); FileDone: (process, 0, 0)
  std::vector<std::pair<uint32_t, uint64_t>> handed_on;      // (comm, seq)
};

class OrderSink : public JoinedOpSink {
 public:
  explicit OrderSink(Delivery& d) : d_(d) {}
  void collective(const CollInstance& c, std::span<const MemberView>) override { d_.handed_on.emplace_back(c.comm, c.seq); }
  void transfer(const P2pTransfer& t) override { d_.handed_on.emplace_back(t.comm, t.op_index); }

 private:
  Delivery& d_;
};

Delivery deliveredWith(const std::string& dir, unsigned threads) {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  RunModel run;
  run.processes.resize(files.size());
  Delivery delivery;
  OrderSink sink(delivery);
  OpJoiner joiner(run, std::vector<ProcessIdentity>(files.size()), sink);
  SharedNames names(run.names);
  FileLeads leads(files.size());
  joiner.countLeadsIn(&leads);
  readInLockstep(
      files, names, ProcessReadOptions{}, threads, 64,
      [&](LoadMessage& message) {
        if (auto* batch = std::get_if<RecordBatch>(&message)) {
          delivery.messages.emplace_back(batch->process, batch->position_ns, batch->colls.size() + batch->p2ps.size());
          joiner.add(*batch);
        } else {
          delivery.messages.emplace_back(std::get<std::unique_ptr<FileDone>>(message)->process, 0, 0);
        }
      },
      &leads);
  joiner.countLeadsIn(nullptr);
  joiner.finish();
  return delivery;
}

// Which file's chunk the joiner takes next depends on what it has taken, never on which
// thread finished decoding first: however many threads decode, the joiner is given the
// same chunks in the same order and hands on the same ops in the same order (so a report
// of the same files is the same every time). Chosen by the threads as they finished, one
// thread and four gave different orders, and two reports of one run differed by a percent.
TEST(OpJoiner, FilesAreDeliveredInTheSameOrderHoweverManyThreadsDecodeThem) {
  testutil::TempDir dir;
  synthetic::SyntheticRunOptions options;
  options.dir = dir.path() + "/run";
  options.ranks = 16;
  options.ranks_per_node = 4;
  options.collectives_per_rank = 3000;
  options.flush_period_ms = 20;
  synthetic::SyntheticRunTruth truth;
  std::string error;
  ASSERT_TRUE(synthetic::writeSyntheticRun(options, truth, error)) << error;
  const Delivery one = deliveredWith(options.dir, 1);
  EXPECT_EQ(one.handed_on.size(), truth.coll_instances + truth.p2p_transfers);
  ASSERT_GT(one.messages.size(), 16u * 10) << "many chunks a file, or the order has nothing to choose";
  for (const unsigned threads : {2u, 4u, 4u}) {
    const Delivery other = deliveredWith(options.dir, threads);
    EXPECT_EQ(other.messages, one.messages) << threads << " threads";
    EXPECT_EQ(other.handed_on, one.handed_on) << threads << " threads";
  }
}

}  // namespace
}  // namespace commtrace::report
