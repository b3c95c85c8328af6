// Plays the live digests of many simulated ranks to a running collector, as their flushers
// would send them: one signed digest per rank per second, each with that second's
// collectives (half on a world communicator of every rank, half on tensor-parallel groups of
// 8), its clock sample, and the rank's communicators on its first. For the collector's CPU,
// memory and traffic at scale: bench/collect_load.sh runs `commtrace collect` under it.
//
//   collect_load --port P [--ranks 1024] [--rate 20] [--seconds 60]   (key: $COMMTRACE_TOKEN)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "core/string_table.h"
#include "sink/chunk_encoder.h"
#include "sink/digest_sender.h"
#include "sink/frame.h"
#include "sink/trace_file.h"

namespace commtrace {
namespace {

struct SimRank {
  int rank = 0;
  std::unique_ptr<DigestSender> link;
  std::unique_ptr<ChunkEncoder> encoder;
  wire::Bytes header_frame;
  uint64_t chunk_index = 0;
};

constexpr uint64_t kWorld = 0x5EED000000000001ull;
uint64_t tpComm(int rank) { return 0x5EED000000010000ull + static_cast<uint64_t>(rank / 8); }

RecordSlot slotOf(RecordKind kind) {
  RecordSlot s{};
  s.kind = kind;
  s.thread = 1;
  return s;
}

void addCommInfos(SimRank& r, int ranks) {
  StringTable& names = StringTable::global();
  for (const auto& [id, name, size, rank] : {std::tuple{kWorld, "world", ranks, r.rank}, std::tuple{tpComm(r.rank), "tp", 8, r.rank % 8}}) {
    RecordSlot s = slotOf(RecordKind::kCommInfo);
    s.payload.comm_info = CommInfoRecord{.comm_id = id, .cpu_ns = nowNs(), .comm_name = names.intern(name), .n_nodes = ranks / 8,
                                         .n_ranks = size, .rank = rank, .global_rank = r.rank, .cuda_device = r.rank % 8};
    r.encoder->add(s);
  }
}

void addCollectives(SimRank& r, uint64_t second, int rate, uint64_t second_start_ns) {
  const StringId all_reduce = StringTable::global().intern("AllReduce"), bf16 = StringTable::global().intern("ncclBfloat16");
  for (int k = 0; k < rate; ++k) {
    const bool world = k % 2 == 0;
    const uint64_t seq = second * static_cast<uint64_t>(rate / 2 + rate % 2) + static_cast<uint64_t>(k / 2);
    const uint64_t start = second_start_ns + static_cast<uint64_t>(k) * (1'000'000'000ull / static_cast<uint64_t>(rate)) +
                           static_cast<uint64_t>((r.rank * 7919 + k * 104729) % 200'000);  // 0-200 us of arrival jitter
    RecordSlot s = slotOf(RecordKind::kColl);
    s.payload.coll = CollRecord{.comm_id = world ? kWorld : tpComm(r.rank), .seq = seq, .op_index = seq, .count = 1 << 22,
                                .bytes = 8 << 20, .cpu_start_ns = start, .cpu_end_ns = start + 20'000,
                                .gpu_start_ns = start + 50'000, .gpu_end_ns = second_start_ns + static_cast<uint64_t>(k + 1) * (1'000'000'000ull / static_cast<uint64_t>(rate)) - 1'000'000,
                                .func = all_reduce, .datatype = bf16, .n_channels = 8};
    r.encoder->add(s);
  }
  RecordSlot clock = slotOf(RecordKind::kClockSample);
  clock.payload.clock_sample = ClockSampleRecord{.monotonic_ns = nowNs(), .realtime_ns = realtimeNs(), .device = -1};
  r.encoder->add(clock);
}

int run(uint16_t port, int ranks, int rate, int seconds, const collect::LinkKey& key) {
  std::vector<SimRank> sims(static_cast<size_t>(ranks));
  const uint64_t start_mono = nowNs(), start_real = realtimeNs();
  for (int i = 0; i < ranks; ++i) {
    SimRank& r = sims[static_cast<size_t>(i)];
    r.rank = i;
    r.link = std::make_unique<DigestSender>(DigestSender::Options{.host = "127.0.0.1", .port = port});
    r.encoder = std::make_unique<ChunkEncoder>(StringTable::global());
    FileHeaderFields h;
    h.identity.rank = i;
    h.identity.local_rank = i % 8;
    h.identity.world_size = ranks;
    h.identity.job_id = "collect-load";
    h.host = "sim" + std::to_string(i / 8);
    h.pid = 100000 + i;
    h.start_monotonic_ns = start_mono;
    h.start_realtime_ns = start_real;
    frame::append(r.header_frame, frame::Type::kFileHeader, 0, encodeFileHeader(h));
    r.link->setKey(key, nowNs());
  }
  // Every link up before the first second, as a job's are long before its collectives flow;
  // each proves itself with a first digest (its communicators) once greeted, as a flusher does
  // at its next drain: the collector holds only so many unproven connections at once.
  wire::Bytes payload, message;
  std::vector<bool> proven(sims.size(), false);
  const uint64_t connect_until = nowNs() + 120'000'000'000ull;
  for (size_t ready = 0; ready < sims.size() && nowNs() < connect_until;) {
    ready = 0;
    for (size_t i = 0; i < sims.size(); ++i) {
      SimRank& r = sims[i];
      r.link->pump(nowNs());
      if (r.link->ready() && !proven[i]) {
        addCommInfos(r, ranks);
        r.encoder->finish(r.chunk_index, /*closing=*/false, payload);
        r.encoder->restartStringTable();
        message = r.header_frame;
        frame::append(message, frame::Type::kChunk, 0, payload);
        proven[i] = r.link->offer(message, nowNs());
        r.chunk_index += proven[i];
      }
      ready += proven[i];
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  uint64_t offered = 0, dropped = 0;
  const uint64_t first_second = nowNs();
  for (int second = 0; second < seconds; ++second) {
    const uint64_t second_start = first_second + static_cast<uint64_t>(second) * 1'000'000'000ull;
    for (SimRank& r : sims) {
      r.link->pump(nowNs());
      if (r.link->needsHeader()) addCommInfos(r, ranks);
      addCollectives(r, static_cast<uint64_t>(second), rate, second_start);
      r.encoder->finish(r.chunk_index, /*closing=*/false, payload);  // the job goes on: the collector is measured, then stopped
      r.encoder->restartStringTable();
      message.clear();
      if (r.link->needsHeader()) message = r.header_frame;
      frame::append(message, frame::Type::kChunk, 0, payload);
      ++offered;
      if (r.link->offer(message, nowNs())) ++r.chunk_index;
      else ++dropped;
    }
    const uint64_t next = second_start + 1'000'000'000ull;
    while (nowNs() < next) {
      for (SimRank& r : sims) r.link->pump(nowNs());
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  for (SimRank& r : sims) r.link->pump(nowNs());
  uint64_t bytes = 0;
  for (const SimRank& r : sims) bytes += r.link->stats().bytes_sent;
  std::printf("ranks %d, %d collectives/s each, %d s: %llu digests offered, %llu dropped; %.0f bytes/s per rank on the wire\n", ranks, rate,
              seconds, static_cast<unsigned long long>(offered), static_cast<unsigned long long>(dropped),
              static_cast<double>(bytes) / ranks / seconds);
  return dropped == 0 ? 0 : 1;
}

}  // namespace
}  // namespace commtrace

int main(int argc, char** argv) {
  int port = 0, ranks = 1024, rate = 20, seconds = 60;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const int value = std::atoi(argv[i + 1]);
    if (flag == "--port") port = value;
    else if (flag == "--ranks") ranks = value;
    else if (flag == "--rate") rate = value;
    else if (flag == "--seconds") seconds = value;
  }
  const char* token = std::getenv("COMMTRACE_TOKEN");
  if (port <= 0 || token == nullptr || ranks < 8 || rate < 2) {
    std::fprintf(stderr, "usage: COMMTRACE_TOKEN=T collect_load --port P [--ranks 1024 (>= 8)] [--rate 20] [--seconds 60]\n");
    return 2;
  }
  return commtrace::run(static_cast<uint16_t>(port), ranks, rate, seconds, commtrace::collect::keyFromToken(token));
}
