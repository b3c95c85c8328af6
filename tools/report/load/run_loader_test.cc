// loadRun over hand-written run directories: bad input, joining collectives and
// point-to-point pairs across ranks, restarts, graph-captured ops, lost comm infos,
// missing and damaged files, drops, clock samples and CUPTI kernels, progress.
#include "tools/report/load/run_loader.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <vector>
#include <sstream>

#include "sink/frame.h"
#include "sink/schema.h"
#include "tests/support/report_load_support.h"
#include "tools/report/load/run_summary.h"

using namespace commtrace;
using namespace commtrace::testing;
using commtrace::report::CollInstance;
using commtrace::report::loadRun;
using commtrace::report::MemberView;
using commtrace::report::RunModel;

namespace {

constexpr uint64_t kWorld = 0xC0FFEE;

struct Loaded {
  bool ok = false;
  std::string err;
  RunModel run;
};

Loaded load(std::vector<std::string> paths, bool progress = false, std::string job = "") {
  Loaded l;
  std::ostringstream err;
  l.ok = loadRun({std::move(paths), progress, std::move(job)}, l.run, err);
  l.err = err.str();
  return l;
}
Loaded load(const std::string& dir, bool progress = false) { return load(std::vector<std::string>{dir}, progress); }

int processOfRank(const RunModel& run, int rank, uint32_t restart = 0) {
  for (size_t p = 0; p < run.processes.size(); ++p) {
    if (run.processes[p].rank == rank && run.processes[p].restart_count == restart) return static_cast<int>(p);
  }
  return -1;
}

// n_ops AllReduces on the world communicator as rank `rank` sees them (comm rank `seat`).
std::vector<RecordSlot> worldOps(int n_ops, uint64_t gpu_base = 1'000'000) {
  std::vector<RecordSlot> ops;
  for (int i = 0; i < n_ops; ++i) {
    const uint64_t k = static_cast<uint64_t>(i);
    ops.push_back(coll({.comm_id = kWorld, .seq = k, .op_index = k, .gpu_start_ns = gpu_base + 1000 * k,
                        .gpu_end_ns = gpu_base + 1000 * k + 500}));
  }
  return ops;
}

// A world of n ranks, each with its comm info and n_ops AllReduces in one chunk.
void writeWorld(const std::string& dir, int n, int n_ops, const std::vector<int>& skip = {}) {
  for (int r = 0; r < n; ++r) {
    if (std::find(skip.begin(), skip.end(), r) != skip.end()) continue;
    std::vector<RecordSlot> chunk{commInfo(kWorld, n, r, r, "world")};
    for (const RecordSlot& s : worldOps(n_ops)) chunk.push_back(s);
    writeRankFile(dir, "rank" + std::to_string(r), rankHeader(r, n), {chunk});
  }
}

TEST(RunLoader, NoSuchDirectoryIsAnError) {
  const Loaded l = load("/nonexistent/commtrace-run");
  EXPECT_FALSE(l.ok);
  EXPECT_EQ(l.err, "commtrace: /nonexistent/commtrace-run: no such file or directory\n");
}

// Nodes often write into per-node subdirectories; a user may also name files and several
// directories. Every file is read once, whatever names it.
TEST(RunLoader, ReadsDirectoryTreesFilesAndSeveralPathsEachFileOnce) {
  TempDir dir;
  std::filesystem::create_directories(dir.path() + "/node0");
  std::filesystem::create_directories(dir.path() + "/node1");
  writeRankFile(dir.path() + "/node0", "rank0", rankHeader(0, 2), {worldOps(1)});
  writeRankFile(dir.path() + "/node1", "rank1", rankHeader(1, 2), {worldOps(1)});
  const std::string rank1 = dir.path() + "/node1/rank1.ctrace";
  for (const std::vector<std::string>& paths : std::vector<std::vector<std::string>>{
           {dir.path()},
           {dir.path() + "/node0", rank1},
           {dir.path(), rank1, dir.path() + "/node0"},
           {dir.path(), dir.path() + "/node1/../node1/rank1.ctrace"}}) {
    const Loaded l = load(paths);
    EXPECT_TRUE(l.ok) << l.err;
    EXPECT_EQ(l.run.processes.size(), 2u) << paths.size() << " paths";
  }
}

// Two jobs' ranks 0 and 1 in one directory (a reused run directory).
void writeTwoJobs(const std::string& dir) {
  for (const char* job : {"slurm-41", "slurm-42"}) {
    for (int r = 0; r < 2; ++r) {
      FileHeaderFields h = rankHeader(r, 2, std::string("node-") + job);
      h.identity.job_id = job;
      std::vector<RecordSlot> chunk{commInfo(kWorld, 2, r, r, "world")};
      for (const RecordSlot& op : worldOps(1)) chunk.push_back(op);
      writeRankFile(dir, std::string(job) + "-rank" + std::to_string(r), h, {chunk});
    }
  }
}

TEST(RunLoader, FilesOfSeveralJobsAreRefusedWithTheJobsListed) {
  TempDir dir;
  writeTwoJobs(dir.path());
  const Loaded l = load(dir.path());
  EXPECT_FALSE(l.ok);
  EXPECT_EQ(l.err,
            "commtrace: these files come from 2 jobs, which are never merged silently; choose one with --job ID, or "
            "read them all as one run with --job all:\n"
            "  slurm-41: 2 files, ranks 0-1, 1 host\n"
            "  slurm-42: 2 files, ranks 0-1, 1 host\n");
}

TEST(RunLoader, JobChoosesOneJobsFilesOrAllOfThem) {
  TempDir dir;
  writeTwoJobs(dir.path());
  const Loaded one = load({dir.path()}, false, "slurm-42");
  ASSERT_TRUE(one.ok) << one.err;
  ASSERT_EQ(one.run.processes.size(), 2u);
  for (const auto& p : one.run.processes) EXPECT_EQ(p.job_id, "slurm-42");
  EXPECT_EQ(one.run.collectives.size(), 1u);

  const Loaded all = load({dir.path()}, false, "all");
  ASSERT_TRUE(all.ok) << all.err;
  EXPECT_EQ(all.run.processes.size(), 4u);

  const Loaded none = load({dir.path()}, false, "slurm-7");
  EXPECT_FALSE(none.ok);
  EXPECT_EQ(none.err, "commtrace: no file here belongs to job slurm-7; the files name 2 jobs: slurm-41, slurm-42\n");
}

TEST(RunLoader, ProcessesThatNamedTheirOwnJobsAreToldHowToShareOne) {
  TempDir dir;
  for (int r = 0; r < 3; ++r) {
    FileHeaderFields h = rankHeader(r, 3);
    h.identity.job_id = "ct-18a0-" + std::to_string(100 + r);
    writeRankFile(dir.path(), "rank" + std::to_string(r), h, {worldOps(1)});
  }
  const Loaded l = load(dir.path());
  EXPECT_FALSE(l.ok);
  EXPECT_NE(l.err.find("  ct-18a0-101: 1 file, ranks 1-1, 1 host\n"), std::string::npos) << l.err;
  EXPECT_NE(l.err.find("3 processes named a job of their own (ct-...): no launcher job id reached them. Set "
                       "COMMTRACE_JOB_ID"),
            std::string::npos)
      << l.err;
}

TEST(RunLoader, DirectoryWithoutTraceFilesIsAnError) {
  TempDir dir;
  writeFile(dir.path() + "/notes.txt", std::vector<uint8_t>{'h', 'i'});
  const Loaded l = load(dir.path());
  EXPECT_FALSE(l.ok);
  EXPECT_EQ(l.err, "commtrace: " + dir.path() + " has no trace files (*.ctrace, or PyTorch profiler traces *.json, *.json.gz)\n");
}

// A directory without *.ctrace files is read for PyTorch profiler traces; JSON that is not
// one is named with the reason. (Beside *.ctrace files JSON is never read: the report tests
// on driver runs, which hold ground-truth.json, cover that.)
TEST(RunLoader, OtherJsonIsNamedAsNotAProfilerTrace) {
  TempDir dir;
  writeFile(dir.path() + "/ground-truth.json", std::vector<uint8_t>{'{', '}'});
  writeFile(dir.path() + "/notes.txt", std::vector<uint8_t>{'h', 'i'});
  const Loaded none = load(dir.path());
  EXPECT_FALSE(none.ok);
  EXPECT_NE(none.err.find("ground-truth.json: JSON, but not a PyTorch profiler trace (no traceEvents)"), std::string::npos) << none.err;
}

TEST(RunLoader, OnlyForeignFilesIsAnErrorNamingEach) {
  TempDir dir;
  const std::string text = "not a trace at all, just text";
  writeFile(dir.path() + "/foreign.ctrace", text.data(), text.size());
  const Loaded l = load(dir.path());
  EXPECT_FALSE(l.ok);
  EXPECT_NE(l.err.find("commtrace: " + dir.path() + "/foreign.ctrace is not a commtrace trace"), std::string::npos)
      << l.err;
  EXPECT_NE(l.err.find("commtrace: none of the 1 trace files in " + dir.path() + " could be read"), std::string::npos);
}

TEST(RunLoader, ForeignAndNewerFilesAreSkippedAndTheRestRead) {
  TempDir dir;
  writeWorld(dir.path(), 2, 3);
  const std::string text = "garbage";
  writeFile(dir.path() + "/foreign.ctrace", text.data(), text.size());
  // A header claiming the next format version, framed correctly.
  wire::Bytes header = encodeFileHeader(rankHeader(2, 2));
  ASSERT_EQ(header[0], 0x08);  // field 1 (format_version), varint
  header[1] = static_cast<uint8_t>(schema::kFormatVersion + 1);
  wire::Bytes file;
  frame::append(file, frame::Type::kFileHeader, 0, header);
  writeFile(dir.path() + "/newer.ctrace", file);

  const Loaded l = load(dir.path());
  ASSERT_TRUE(l.ok) << l.err;
  EXPECT_EQ(l.err, "");
  EXPECT_EQ(l.run.processes.size(), 2u);
  ASSERT_EQ(l.run.skipped_files.size(), 2u);
  EXPECT_NE(l.run.skipped_files[0].find("foreign.ctrace is not a commtrace trace"), std::string::npos);
  EXPECT_NE(l.run.skipped_files[1].find("newer.ctrace has format version"), std::string::npos);
  EXPECT_EQ(l.run.collectives.size(), 3u);
}

TEST(RunLoader, CollectivesJoinAcrossRanksBySeatInTheCommunicator) {
  TempDir dir;
  // Global rank r sits at comm rank (r + 1) % 3; rank 1 does not know the bytes (the
  // "Unknown" datatype), the others do.
  for (int r = 0; r < 3; ++r) {
    const int seat = (r + 1) % 3;
    std::vector<RecordSlot> chunk{commInfo(kWorld, 3, seat, r, "world", 1)};
    for (uint64_t k = 0; k < 4; ++k) {
      chunk.push_back(coll({.comm_id = kWorld, .seq = k, .op_index = k, .bytes = r == 1 ? 0u : 8192u,
                            .gpu_start_ns = 10'000 * k + 100 * static_cast<uint64_t>(r), .gpu_end_ns = 10'000 * k + 5000}));
    }
    writeRankFile(dir.path(), "rank" + std::to_string(r), rankHeader(r, 3), {chunk});
  }
  const Loaded l = load(dir.path());
  ASSERT_TRUE(l.ok) << l.err;
  const RunModel& run = l.run;
  ASSERT_EQ(run.comms.size(), 1u);
  EXPECT_EQ(run.comms[0].id, kWorld);
  EXPECT_EQ(run.comms[0].size, 3);
  EXPECT_EQ(run.name(run.comms[0].name), "world");
  EXPECT_EQ(run.comms[0].global_ranks, (std::vector<int>{2, 0, 1}));
  ASSERT_EQ(run.collectives.size(), 4u);
  for (uint64_t k = 0; k < 4; ++k) {
    const CollInstance& c = run.collectives[k];
    EXPECT_EQ(c.op_index, k);
    EXPECT_EQ(c.seq, k);
    EXPECT_EQ(run.name(c.func), "AllReduce");
    EXPECT_EQ(run.name(c.algo), "RING");
    EXPECT_EQ(c.bytes, 8192u) << "taken from the ranks that know it";
    ASSERT_EQ(c.n_members, 3u);
    for (int seat = 0; seat < 3; ++seat) {
      const MemberView& m = run.membersOf(c)[seat];
      const int global = run.comms[0].global_ranks[static_cast<size_t>(seat)];
      EXPECT_EQ(m.process, processOfRank(run, global));
      EXPECT_EQ(run.comms[0].processes[static_cast<size_t>(seat)], m.process);
      EXPECT_EQ(m.comm_rank, seat);
      EXPECT_EQ(m.gpu_start_ns, 10'000 * k + 100 * static_cast<uint64_t>(global));
      EXPECT_EQ(m.gpu_end_ns, 10'000 * k + 5000);
    }
  }
  EXPECT_TRUE(run.missing_ranks.empty());
  EXPECT_EQ(run.world_size, 3);
}

TEST(RunLoader, FuncsWithTheSameSeqAreDifferentInstances) {
  TempDir dir;
  for (int r = 0; r < 2; ++r) {
    writeRankFile(dir.path(), "rank" + std::to_string(r), rankHeader(r, 2),
                  {{commInfo(kWorld, 2, r, r), coll({.comm_id = kWorld, .func = "AllReduce", .seq = 0, .op_index = 0}),
                    coll({.comm_id = kWorld, .func = "AllGather", .seq = 0, .op_index = 1})}});
  }
  const Loaded l = load(dir.path());
  ASSERT_TRUE(l.ok) << l.err;
  ASSERT_EQ(l.run.collectives.size(), 2u);
  EXPECT_EQ(l.run.name(l.run.collectives[0].func), "AllReduce");
  EXPECT_EQ(l.run.name(l.run.collectives[1].func), "AllGather");
}

TEST(RunLoader, GraphCapturedReplaysJoinOnOpIndex) {
  TempDir dir;
  // NCCL does not move the seqNumber for graph replays: all three carry seq 7.
  for (int r = 0; r < 2; ++r) {
    std::vector<RecordSlot> chunk{commInfo(kWorld, 2, r, r)};
    for (uint64_t k = 10; k < 13; ++k) {
      chunk.push_back(coll({.comm_id = kWorld, .seq = 7, .op_index = k, .gpu_end_ns = 1000 * k, .graph_captured = true}));
    }
    writeRankFile(dir.path(), "rank" + std::to_string(r), rankHeader(r, 2), {chunk});
  }
  const Loaded l = load(dir.path());
  ASSERT_TRUE(l.ok) << l.err;
  ASSERT_EQ(l.run.collectives.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const CollInstance& c = l.run.collectives[i];
    EXPECT_TRUE(c.graph_captured);
    EXPECT_EQ(c.op_index, 10 + i);
    for (int seat = 0; seat < 2; ++seat) {
      EXPECT_GE(l.run.membersOf(c)[seat].process, 0);
      EXPECT_EQ(l.run.membersOf(c)[seat].gpu_end_ns, 1000 * (10 + i));
    }
  }
}

TEST(RunLoader, RestartGenerationsAreKeptApart) {
  TempDir dir;
  // Both generations reuse the comm id (a deterministic hash can repeat after a restart).
  for (uint32_t restart = 0; restart < 2; ++restart) {
    for (int r = 0; r < 2; ++r) {
      writeRankFile(dir.path(), "rank" + std::to_string(r) + "-restart" + std::to_string(restart),
                    rankHeader(r, 2, "host0", restart),
                    {{commInfo(kWorld, 2, r, r),
                      coll({.comm_id = kWorld, .seq = 0, .op_index = 0, .gpu_end_ns = 100 + restart})}});
    }
  }
  const Loaded l = load(dir.path());
  ASSERT_TRUE(l.ok) << l.err;
  const RunModel& run = l.run;
  EXPECT_EQ(run.processes.size(), 4u);
  ASSERT_EQ(run.comms.size(), 2u);
  EXPECT_EQ(run.comms[0].restart_count, 0u);
  EXPECT_EQ(run.comms[1].restart_count, 1u);
  ASSERT_EQ(run.collectives.size(), 2u);
  for (const CollInstance& c : run.collectives) {
    const uint32_t restart = run.comms[c.comm].restart_count;
    for (int seat = 0; seat < 2; ++seat) {
      const MemberView& m = run.membersOf(c)[seat];
      EXPECT_EQ(m.process, processOfRank(run, seat, restart));
      EXPECT_EQ(m.gpu_end_ns, 100 + restart);
    }
  }
  EXPECT_TRUE(run.missing_ranks.empty());
}

TEST(RunLoader, OpsBeforeTheirCommInfoArePlacedOnceItArrives) {
  TempDir dir;
  for (int r = 0; r < 2; ++r) {
    writeRankFile(dir.path(), "rank" + std::to_string(r), rankHeader(r, 2),
                  {worldOps(3), {commInfo(kWorld, 2, r, r)}});
  }
  const Loaded l = load(dir.path());
  ASSERT_TRUE(l.ok) << l.err;
  ASSERT_EQ(l.run.collectives.size(), 3u);
  for (const CollInstance& c : l.run.collectives) {
    EXPECT_GE(l.run.membersOf(c)[0].process, 0);
    EXPECT_GE(l.run.membersOf(c)[1].process, 0);
  }
  for (const auto& p : l.run.processes) EXPECT_TRUE(p.issues.empty());
}

TEST(RunLoader, ARankWhoseCommInfoWasLostTakesTheOnlyOpenSeat) {
  TempDir dir;
  writeWorld(dir.path(), 3, 2, {2});
  writeRankFile(dir.path(), "rank2", rankHeader(2, 3), {worldOps(2)});  // no comm info
  const Loaded l = load(dir.path());
  ASSERT_TRUE(l.ok) << l.err;
  ASSERT_EQ(l.run.collectives.size(), 2u);
  for (const CollInstance& c : l.run.collectives) EXPECT_EQ(l.run.membersOf(c)[2].process, processOfRank(l.run, 2));
  EXPECT_EQ(l.run.comms[0].global_ranks, (std::vector<int>{0, 1, 2}));
}

TEST(RunLoader, OpsWithNoKnownSeatAreLeftOutAndSaidSo) {
  TempDir dir;
  writeWorld(dir.path(), 4, 2, {2, 3});
  for (int r : {2, 3}) writeRankFile(dir.path(), "rank" + std::to_string(r), rankHeader(r, 4), {worldOps(2)});
  const Loaded l = load(dir.path());
  ASSERT_TRUE(l.ok) << l.err;
  const int p2 = processOfRank(l.run, 2);
  ASSERT_EQ(l.run.processes[static_cast<size_t>(p2)].issues.size(), 1u);
  EXPECT_EQ(l.run.processes[static_cast<size_t>(p2)].issues[0],
            "commtrace: " + dir.path() + "/rank2.ctrace: 2 op records left out: no comm-info record places this rank (or its peer) in their communicator");
  for (const CollInstance& c : l.run.collectives) EXPECT_EQ(l.run.membersOf(c)[2].process, -1);
}

TEST(RunLoader, SendsMeetTheirReceives) {
  TempDir dir;
  const std::vector<std::vector<RecordSlot>> rank0{{commInfo(kWorld, 3, 0, 0), p2p(kWorld, true, 1, 0, 100),
                                                    p2p(kWorld, true, 1, 1, 200), p2p(kWorld, false, 1, 0, 300, "AlltoAll"),
                                                    p2p(kWorld, true, 2, 0, 400)}};
  const std::vector<std::vector<RecordSlot>> rank1{{commInfo(kWorld, 3, 1, 1), p2p(kWorld, false, 0, 1, 200),
                                                    p2p(kWorld, false, 0, 0, 100), p2p(kWorld, true, 0, 0, 300, "AlltoAll")}};
  writeRankFile(dir.path(), "rank0", rankHeader(0, 3), rank0);
  writeRankFile(dir.path(), "rank1", rankHeader(1, 3), rank1);
  const Loaded l = load(dir.path());
  ASSERT_TRUE(l.ok) << l.err;
  const RunModel& run = l.run;
  ASSERT_EQ(run.transfers.size(), 4u);
  const struct {
    int src, dst;
    uint64_t op_index, bytes;
    const char* func;
    bool received;
  } want[] = {{0, 1, 0, 100, "Send", true},
              {0, 1, 1, 200, "Send", true},
              {1, 0, 0, 300, "AlltoAll", true},
              {0, 2, 0, 400, "Send", false}};  // rank 2 wrote no file
  for (const auto& w : want) {
    const auto t = std::find_if(run.transfers.begin(), run.transfers.end(), [&](const auto& x) {
      return x.send.comm_rank == w.src && x.recv.comm_rank == w.dst && x.op_index == w.op_index;
    });
    ASSERT_NE(t, run.transfers.end()) << w.src << "->" << w.dst << " #" << w.op_index;
    EXPECT_EQ(t->bytes, w.bytes);
    EXPECT_EQ(run.name(t->func), w.func);
    EXPECT_EQ(t->send.process, processOfRank(run, w.src));
    EXPECT_EQ(t->recv.process, w.received ? processOfRank(run, w.dst) : -1);
  }
  for (size_t i = 1; i < run.transfers.size(); ++i) EXPECT_LE(run.transfers[i - 1].op_index, run.transfers[i].op_index);
  EXPECT_EQ(run.missing_ranks, (std::vector<int>{2}));
}

TEST(RunLoader, AMissingRankFileLeavesItsSeatsEmpty) {
  TempDir dir;
  writeWorld(dir.path(), 4, 3, {2});
  const Loaded l = load(dir.path());
  ASSERT_TRUE(l.ok) << l.err;
  EXPECT_EQ(l.run.world_size, 4);
  EXPECT_EQ(l.run.missing_ranks, (std::vector<int>{2}));
  ASSERT_EQ(l.run.collectives.size(), 3u);
  for (const CollInstance& c : l.run.collectives) {
    ASSERT_EQ(c.n_members, 4u);
    for (int seat = 0; seat < 4; ++seat) {
      EXPECT_EQ(l.run.membersOf(c)[seat].comm_rank, seat);
      EXPECT_EQ(l.run.membersOf(c)[seat].process, seat == 2 ? -1 : processOfRank(l.run, seat));
    }
  }
  EXPECT_EQ(l.run.comms[0].processes[2], -1);
  EXPECT_EQ(l.run.comms[0].global_ranks[2], -1);
}

TEST(RunLoader, RanksComeFromTheHeaderElseCommInfoElseTheWorldSeat) {
  TempDir dir;
  writeRankFile(dir.path(), "a", rankHeader(0, 3), {{commInfo(kWorld, 3, 0, 0)}});
  writeRankFile(dir.path(), "b", rankHeader(-1, -1), {{commInfo(kWorld, 3, 1, 1)}});
  writeRankFile(dir.path(), "c", rankHeader(-1, -1), {{commInfo(kWorld, 3, 2, -1)}});
  const Loaded l = load(dir.path());
  ASSERT_TRUE(l.ok) << l.err;
  ASSERT_EQ(l.run.processes.size(), 3u);
  EXPECT_EQ(l.run.processes[0].rank, 0);
  EXPECT_EQ(l.run.processes[1].rank, 1);
  EXPECT_EQ(l.run.processes[2].rank, 2);
  EXPECT_EQ(l.run.comms[0].global_ranks, (std::vector<int>{0, 1, 2}));
  EXPECT_TRUE(l.run.missing_ranks.empty());
}

// The profiler plugin describes a communicator without the global rank; the preload face's
// NCCL wrappers describe it again with it. The second record fills the seat.
TEST(RunLoader, ASecondCommInfoFillsTheGlobalRankTheFirstLacked) {
  TempDir dir;
  constexpr uint64_t kPair = 0xBEEF;
  writeRankFile(dir.path(), "a", rankHeader(-1, -1), {{commInfo(kPair, 2, 0, -1), commInfo(kPair, 2, 0, 7)}});
  writeRankFile(dir.path(), "b", rankHeader(-1, -1), {{commInfo(kPair, 2, 1, -1)}, {commInfo(kPair, 2, 1, 3)}});
  const Loaded l = load(dir.path());
  ASSERT_TRUE(l.ok) << l.err;
  ASSERT_EQ(l.run.comms.size(), 1u);
  EXPECT_EQ(l.run.comms[0].global_ranks, (std::vector<int>{7, 3}));
  ASSERT_EQ(l.run.processes.size(), 2u);
  EXPECT_EQ(l.run.processes[0].rank, 7);
  EXPECT_EQ(l.run.processes[1].rank, 3);
}

TEST(RunLoader, DropsAreTheLatestCumulativeCountPerThreadAndKind) {
  TempDir dir;
  const auto drop = [](uint64_t ring_full, uint64_t sink_failed, uint32_t thread, RecordKind kind, uint64_t untracked) {
    RecordSlot s{};
    s.kind = RecordKind::kDropSummary;
    s.payload.drop_summary = {ring_full, sink_failed, 1, thread, static_cast<uint8_t>(kind), untracked};
    return s;
  };
  writeRankFile(dir.path(), "rank0", rankHeader(0, 1),
                {{commInfo(kWorld, 1, 0, 0), drop(5, 0, 1, RecordKind::kColl, 4), drop(3, 0, 2, RecordKind::kP2p, 0)},
                 {drop(9, 0, 1, RecordKind::kColl, 7), drop(0, 2, 0, RecordKind::kColl, 6)}});
  const Loaded l = load(dir.path());
  ASSERT_TRUE(l.ok) << l.err;
  EXPECT_EQ(l.run.processes[0].dropped_records, 9u + 3u + 2u);
  EXPECT_EQ(l.run.processes[0].untracked_events, 7u);
  EXPECT_EQ(l.run.processes[0].records, 5u);
}

// Cut inside its last chunk: read up to the cut. The file was not closed: open, its cut
// chunk the one being written, no damage; a file of a writer that does not mark its last
// chunk (before 0.1) has a torn tail: damaged.
TEST(RunLoader, ATruncatedFileIsReadUpToTheCut) {
  for (const bool marks_closing : {true, false}) {
    SCOPED_TRACE(marks_closing ? "writer marks its last chunk" : "writer before 0.1");
    TempDir dir;
    writeWorld(dir.path(), 2, 2, {1});
    std::vector<std::vector<RecordSlot>> chunks{{commInfo(kWorld, 2, 1, 1)}, {worldOps(1)}, {worldOps(2)[1]}};
    FileHeaderFields header = rankHeader(1, 2);
    header.marks_closing = marks_closing;
    const BuiltTrace trace = buildTrace(chunks, header);
    std::vector<uint8_t> cut(trace.bytes.begin(), trace.bytes.begin() + static_cast<std::ptrdiff_t>(trace.chunk_end[2] - 7));
    writeFile(dir.path() + "/rank1.ctrace", cut);

    const Loaded l = load(dir.path());
    ASSERT_TRUE(l.ok) << l.err;
    const auto& info = l.run.processes[static_cast<size_t>(processOfRank(l.run, 1))];
    using State = report::ProcessInfo::FileState;
    EXPECT_EQ(info.file_state, marks_closing ? State::kOpen : State::kUnknown);
    // Damaged either way: a writer before the mark leaves a torn tail that is damage; an open
    // file cut long after its writer last wrote (its header's start is years before its
    // mtime) is no live process's chunk being written but a file cut short.
    EXPECT_TRUE(info.damaged);
    ASSERT_FALSE(info.issues.empty());
    EXPECT_NE(info.issues.back().find(marks_closing ? "cut short or changed after its writer stopped" : "torn tail"), std::string::npos)
        << info.issues.back();
    ASSERT_EQ(l.run.collectives.size(), 2u);
    EXPECT_GE(l.run.membersOf(l.run.collectives[0])[1].process, 0) << "the op before the cut";
    EXPECT_EQ(l.run.membersOf(l.run.collectives[1])[1].process, -1) << "the op after it";
  }
}

// Each file's ops span on CLOCK_REALTIME (the header's realtime at its monotonic start):
// rank 1's file stops two ops before rank 0's.
TEST(RunLoader, EachFilesOpsSpanIsTakenOnTheRealtimeClock) {
  TempDir dir;
  for (int r = 0; r < 2; ++r) {
    std::vector<RecordSlot> chunk{commInfo(kWorld, 2, r, r, "world")};
    for (const RecordSlot& s : worldOps(r == 0 ? 5 : 3)) chunk.push_back(s);
    writeRankFile(dir.path(), "rank" + std::to_string(r), rankHeader(r, 2), {chunk});
  }
  const Loaded l = load(dir.path());
  ASSERT_TRUE(l.ok) << l.err;
  const FileHeaderFields h = rankHeader(0, 2);
  const auto utc = [&](uint64_t cpu_ns) { return h.start_realtime_ns + cpu_ns - h.start_monotonic_ns; };
  const auto& rank0 = l.run.processes[static_cast<size_t>(processOfRank(l.run, 0))];
  const auto& rank1 = l.run.processes[static_cast<size_t>(processOfRank(l.run, 1))];
  EXPECT_EQ(rank0.first_op_utc_ns, utc(100)) << "op 0's CPU start";
  EXPECT_EQ(rank0.last_op_utc_ns, utc(204)) << "op 4's CPU end";
  EXPECT_EQ(rank1.last_op_utc_ns, utc(202));
  const report::RunSummary s = report::summarizeRun(l.run);
  EXPECT_EQ(s.first_op_utc_ns, utc(100));
  EXPECT_EQ(s.last_op_utc_ns, utc(204));
  EXPECT_EQ(s.all_files_reach_utc_ns, utc(202));
}

TEST(RunLoader, ACorruptedChunkIsSkippedAndTheRestRead) {
  TempDir dir;
  writeWorld(dir.path(), 2, 3, {1});
  const std::vector<RecordSlot> ops = worldOps(3);
  std::vector<std::vector<RecordSlot>> chunks{{commInfo(kWorld, 2, 1, 1), ops[0]}, {ops[1]}, {ops[2]}};
  BuiltTrace trace = buildTrace(chunks, rankHeader(1, 2));
  trace.bytes[trace.chunk_begin[1] + frame::kHeaderBytes + 2] ^= 0xFF;
  writeFile(dir.path() + "/rank1.ctrace", trace.bytes);

  const Loaded l = load(dir.path());
  ASSERT_TRUE(l.ok) << l.err;
  const auto& info = l.run.processes[static_cast<size_t>(processOfRank(l.run, 1))];
  EXPECT_TRUE(info.damaged);
  ASSERT_EQ(info.issues.size(), 1u);
  EXPECT_NE(info.issues[0].find("CRC mismatch"), std::string::npos) << info.issues[0];
  ASSERT_EQ(l.run.collectives.size(), 3u);
  EXPECT_GE(l.run.membersOf(l.run.collectives[0])[1].process, 0);
  EXPECT_EQ(l.run.membersOf(l.run.collectives[1])[1].process, -1);
  EXPECT_GE(l.run.membersOf(l.run.collectives[2])[1].process, 0);
}

TEST(RunLoader, ClockSamplesMapCpuAndCuptiTimesOntoTheGpuClock) {
  TempDir dir;
  constexpr uint64_t kGpuBase = 1'790'000'000'000'000'000ull;
  std::vector<RecordSlot> chunk{commInfo(kWorld, 1, 0, 0)};
  for (uint64_t k = 0; k < 10; ++k) {  // the GPU clock runs 10 ppm fast against both
    RecordSlot s{};
    s.kind = RecordKind::kClockSample;
    const uint64_t elapsed = k * 100'000'000;
    s.payload.clock_sample = {1'000'000'000 + elapsed, 0, kGpuBase + elapsed + elapsed / 100'000, 5'000'000'000 + elapsed, 0};
    chunk.push_back(s);
  }
  const auto kernel = [](const char* name, uint8_t activity, uint64_t start, uint64_t end) {
    RecordSlot s{};
    s.kind = RecordKind::kKernelActivity;
    s.payload.kernel_activity = KernelActivityRecord{.start_ns = start, .end_ns = end, .name = sid(name), .activity = activity};
    return s;
  };
  // Kernel names as CUPTI reports them: mangled (seen on an H100 with NCCL 2.28.9).
  chunk.push_back(kernel("_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE", 1, 5'100'000'000,
                         5'100'050'000));
  chunk.push_back(kernel("_ZN7cutlass7Kernel2I43cutlass_80_simt_sgemm_256x128_8x4_nn_align1EEvNT_6ParamsE", 1,
                         5'100'000'000, 5'100'100'000));
  chunk.push_back(kernel("", 2, 5'200'000'000, 5'200'100'000));  // a memcpy
  writeRankFile(dir.path(), "rank0", rankHeader(0, 1), {chunk});

  const Loaded l = load(dir.path());
  ASSERT_TRUE(l.ok) << l.err;
  const auto& info = l.run.processes[0];
  ASSERT_TRUE(info.gpu_from_cpu.valid);
  ASSERT_TRUE(info.gpu_from_cupti.valid);
  EXPECT_NEAR(info.gpu_from_cpu.slope, 1.00001, 1e-9);
  // Clock readings are ~1.8e18: a double holds them to 256 ns.
  EXPECT_NEAR(info.gpu_from_cpu.apply(1'450'000'000.0) - static_cast<double>(kGpuBase), 450'000'000 + 4'500, 512);
  const auto& timeline = l.run.timelines[0];
  EXPECT_TRUE(timeline.has_kernel_records);
  EXPECT_EQ(timeline.unmapped_kernels, 0u);
  ASSERT_EQ(timeline.compute.size(), 1u) << "NCCL's kernels and memcpys are not compute";
  EXPECT_NEAR(static_cast<double>(timeline.compute[0].start_ns - kGpuBase), 100'000'000 + 1'000, 512);
  EXPECT_NEAR(static_cast<double>(timeline.compute[0].end_ns - timeline.compute[0].start_ns), 100'001, 512);
  EXPECT_EQ(l.run.name(timeline.compute[0].name),
            "void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(cutlass_80_simt_sgemm_256x128_8x4_nn_align1::Params)");
}

TEST(RunLoader, KernelsWithoutACuptiClockSampleAreCountedNotPlaced) {
  TempDir dir;
  RecordSlot kernel{};
  kernel.kind = RecordKind::kKernelActivity;
  kernel.payload.kernel_activity = KernelActivityRecord{.start_ns = 10, .end_ns = 20, .name = sid("gemm"), .activity = 1};
  writeRankFile(dir.path(), "rank0", rankHeader(0, 1), {{commInfo(kWorld, 1, 0, 0), kernel}});
  const Loaded l = load(dir.path());
  ASSERT_TRUE(l.ok) << l.err;
  EXPECT_FALSE(l.run.processes[0].gpu_from_cupti.valid);
  EXPECT_TRUE(l.run.timelines[0].has_kernel_records);
  EXPECT_TRUE(l.run.timelines[0].compute.empty());
  EXPECT_EQ(l.run.timelines[0].unmapped_kernels, 1u);
}

// The CUDA sync calls the preload face timed are tallied per kind and stream as the file is
// read, over chunks; its other API spans (NCCL's) are not.
TEST(RunLoader, CudaSyncCallsAreTalliedAndOtherApiSpansAreNot) {
  TempDir dir;
  const auto span = [](const char* name, uint64_t stream, uint64_t event, uint64_t start, int result) {
    RecordSlot s{};
    s.kind = RecordKind::kApiSpan;
    s.payload.api_span = ApiSpanRecord{.comm_id = 0, .stream = stream, .arg = event, .cpu_start_ns = start,
                                       .cpu_end_ns = start + 2'000, .name = sid(name), .result = result};
    return s;
  };
  writeRankFile(dir.path(), "rank0", rankHeader(0, 1),
                {{span("cudaStreamSynchronize", 0x5a000, 0, 9'000'000, 0), span("ncclGroupStart", 0, 0, 8'000'000, 0)},
                 {span("cudaEventSynchronize", 0, 0xea000, 7'000'000, 700)}});
  const Loaded l = load(dir.path());
  ASSERT_TRUE(l.ok) << l.err;
  const auto& calls = l.run.timelines[0].cuda_sync.calls();
  ASSERT_EQ(calls.size(), 2u);
  const report::SyncCallTally& event = calls.at("cudaEventSynchronize");
  EXPECT_EQ(event.all.count, 1u);
  EXPECT_EQ(event.all.failed, 1u);
  EXPECT_EQ(event.all.total_us, 2.0);
  EXPECT_TRUE(event.by_stream.empty());
  const report::SyncCallTally& stream = calls.at("cudaStreamSynchronize");
  EXPECT_EQ(stream.all.count, 1u);
  ASSERT_EQ(stream.by_stream.size(), 1u);
  EXPECT_EQ(stream.by_stream.begin()->first, 0x5a000u);
}

TEST(RunLoader, ProgressIsOneRedrawnLineOnlyWhenAsked) {
  TempDir dir;
  writeWorld(dir.path(), 2, 3);
  const Loaded quiet = load(dir.path(), false);
  ASSERT_TRUE(quiet.ok);
  EXPECT_EQ(quiet.err, "");
  const Loaded shown = load(dir.path(), true);
  ASSERT_TRUE(shown.ok);
  EXPECT_EQ(shown.err.front(), '\r');
  EXPECT_EQ(shown.err.back(), '\n');
  EXPECT_EQ(std::count(shown.err.begin(), shown.err.end(), '\n'), 1);
  std::ostringstream total;
  total.precision(1);
  total << std::fixed << static_cast<double>(std::filesystem::file_size(dir.path() + "/rank0.ctrace") +
                                            std::filesystem::file_size(dir.path() + "/rank1.ctrace")) / 1e3;
  const std::string last = "\rcommtrace: reading 2 files, 2 done (" + total.str() + " of " + total.str() + " kB)\n";
  EXPECT_EQ(shown.err.substr(shown.err.rfind('\r')), last);
}

}  // namespace

// --from/--to step:N counts the lowest rank's NVTX step ranges where it has them (as the
// overlap table does), not its op pattern: ten AllReduces, two per "ProfilerStep#N" range
// (one op each would be the op pattern's step); steps 2 and 3 are ops 4 to 7.
TEST(RunLoader, StepWindowsCountNvtxStepRangesWhereThereAreAny) {
  TempDir dir;
  for (int r = 0; r < 2; ++r) {
    std::vector<RecordSlot> chunk{commInfo(kWorld, 2, r, r, "world")};
    for (const RecordSlot& s : worldOps(10)) chunk.push_back(s);
    for (int step = 0; step < 5; ++step) {
      RecordSlot range{};
      range.kind = RecordKind::kPhaseRange;
      const std::string name = "ProfilerStep#" + std::to_string(40 + step);
      range.payload.phase_range = {.cpu_start_ns = 100u + 2u * step, .cpu_end_ns = 102u + 2u * step, .payload = 0,
                                   .name = sid(name.c_str()), .domain = 0, .category = 0, .depth = 0};
      chunk.push_back(range);
    }
    writeRankFile(dir.path(), "rank" + std::to_string(r), rankHeader(r, 2), {chunk});
  }
  using Kind = report::TimePoint::Kind;
  RunModel run;
  std::ostringstream err;
  ASSERT_TRUE(loadRun({.paths = {dir.path()}, .window = {.from = {Kind::kStep, 2}, .to = {Kind::kStep, 4}}}, run, err)) << err.str();
  EXPECT_EQ(run.window.step_range, "ProfilerStep#40");
  EXPECT_EQ(run.window.step_period, 0u);
  ASSERT_EQ(run.collectives.size(), 4u);
  for (size_t i = 0; i < run.collectives.size(); ++i) EXPECT_EQ(run.collectives[i].op_index, 4 + i);
  err.str("");
  EXPECT_FALSE(loadRun({.paths = {dir.path()}, .window = {.from = {Kind::kStep, 5}, .to = {}}}, run, err));
  EXPECT_NE(err.str().find("rank 0 has 5 steps"), std::string::npos) << err.str();
}

// What a sink was told of the run's width, and how many ops it had taken by then.
struct WidthSink : report::JoinedOpSink {
  std::vector<std::pair<size_t, uint64_t>> told;  // (processes, ops taken before)
  uint64_t ops = 0;
  void collective(const CollInstance&, std::span<const MemberView>) override { ++ops; }
  void transfer(const report::P2pTransfer&) override { ++ops; }
  void runWidth(size_t processes) override { told.emplace_back(processes, ops); }
};

// The samples kept per process are sized by the run's width (width_budget.h): the stream is
// told it once, before its first op, through a time window too.
TEST(RunLoader, TheStreamIsToldTheRunsWidthBeforeItsFirstOp) {
  TempDir dir;
  writeWorld(dir.path(), 3, 5);
  for (bool windowed : {false, true}) {
    WidthSink sink;
    RunModel run;
    std::ostringstream err;
    report::LoadOptions options{.paths = {dir.path()}, .stream = &sink};
    if (windowed) options.window.from = {report::TimePoint::Kind::kSinceStart, 0};
    ASSERT_TRUE(loadRun(options, run, err)) << err.str();
    EXPECT_EQ(sink.told, (std::vector<std::pair<size_t, uint64_t>>{{3, 0}})) << "windowed " << windowed;
    if (!windowed) {
      EXPECT_EQ(sink.ops, 5u);
    }
  }
}
