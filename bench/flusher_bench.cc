// The sink side of issue #2: how fast the flusher turns records into a file, and how big
// that file is.
//
//   BM_EncodeWrite     one core: ChunkEncoder.add x chunk_records + finish + frame + write(2)
//                      of FsdpStream records pre-generated into RecordSlots ("records/s" is
//                      per CPU second of this thread, write(2) included; the Time column is
//                      wall time per chunk).
//   BM_EncodeOnly      the same without frame and write(2): where the time goes.
//   BM_EndToEnd        one producer calling record() as fast as it can (yielding and
//                      retrying when its ring is full), the real Flusher draining into a
//                      file; records written per wall second until stop() returned.
//   BM_OnDiskBytes/P/T bytes on disk per collective: 2000 steps of the FsdpStream (over
//                      200,000 records) through record() and the real Flusher, which is
//                      drained every P ms of the stream's own clock. That is what the
//                      default 200 ms period does at the stream's own rate (the
//                      stream_ops_per_s counter), without waiting minutes of wall time;
//                      P = 200 is the number for the README, 100 and 1000 show how chunk
//                      size moves it; T is the GPU timer's tick in ns (1024, or 1). The file is read back with the reader and must hold
//                      every record pushed.
//   BM_ReadBack        one core: TraceReader::next over a file of 200 chunks of 500 FsdpStream
//                      collectives (about a 200 ms chunk's worth each), frames read, CRCs
//                      checked, chunks parsed and decoded into RecordSlots; ns_per_record.
#include <benchmark/benchmark.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "bench/main_with_run_dir.h"
#include "ringbuffer/ringbuffer.h"
#include "sink/chunk_encoder.h"
#include "sink/flusher.h"
#include "sink/frame.h"
#include "sink/reader.h"
#include "tools/synthetic/fsdp_stream.h"

namespace commtrace {
namespace {

using Clock = std::chrono::steady_clock;

const FlusherOptions kDefaults;
std::string g_run_dir;

void removeRunFiles() {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(g_run_dir, ec)) std::filesystem::remove(entry.path(), ec);
}

std::vector<CollRecord> fsdpRecords(size_t n) {
  synthetic::FsdpStream stream({.rank = 0, .world_size = 8, .layers = 24, .seed = 1});
  std::vector<CollRecord> records(n);
  for (auto& r : records) r = stream.next();
  return records;
}

// Slots as a ring holds them; a whole number of chunks, each a contiguous stretch of the
// stream (only the wrap from the last chunk to the first jumps back in time).
const std::vector<RecordSlot>& fsdpSlots() {
  static const std::vector<RecordSlot> slots = [] {
    const auto records = fsdpRecords(16 * size_t{kDefaults.chunk_records});
    std::vector<RecordSlot> out(records.size());
    for (size_t i = 0; i < records.size(); ++i) {
      out[i].kind = RecordKind::kColl;
      out[i].thread = 4242;
      out[i].payload.coll = records[i];
    }
    return out;
  }();
  return slots;
}

template <bool kWrite>
void encodeBench(benchmark::State& state) {
  const auto& slots = fsdpSlots();
  const uint32_t chunk = kDefaults.chunk_records;
  ChunkEncoder encoder(StringTable::global());
  wire::Bytes payload, framed;
  TraceFile file;
  if (kWrite) {
    FileHeaderFields header;
    header.host = "bench";
    header.pid = getpid();
    std::string error;
    if (!file.create(g_run_dir, header, error)) {
      state.SkipWithError(error.c_str());
      return;
    }
  }
  size_t next = 0;
  uint64_t chunk_index = 0, bytes = 0;
  for (auto _ : state) {
    for (uint32_t i = 0; i < chunk; ++i) encoder.add(slots[next + i]);
    next = (next + chunk) % slots.size();
    encoder.finish(chunk_index++, false, payload);
    if (kWrite) {
      framed.clear();
      frame::append(framed, frame::Type::kChunk, 0, payload);
      std::string error;
      if (!file.append(framed, error)) {
        state.SkipWithError(error.c_str());
        break;
      }
      bytes += framed.size();
    } else {
      bytes += payload.size();
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * chunk);
  state.counters["bytes_per_record"] =
      static_cast<double>(bytes) / static_cast<double>(state.iterations() * uint64_t{chunk});
  removeRunFiles();
}

// A file of `chunks` chunks of `per_chunk` slots each; its path.
std::string writeReadBackFile(size_t chunks, uint32_t per_chunk, std::string& error) {
  const auto& slots = fsdpSlots();
  ChunkEncoder encoder(StringTable::global());
  wire::Bytes payload, framed;
  TraceFile file;
  FileHeaderFields header;
  header.host = "bench";
  header.pid = getpid();
  if (!file.create(g_run_dir, header, error)) return "";
  size_t next = 0;
  for (size_t c = 0; c < chunks; ++c) {
    for (uint32_t i = 0; i < per_chunk; ++i) encoder.add(slots[(next + i) % slots.size()]);
    next += per_chunk;
    encoder.finish(c, false, payload);
    framed.clear();
    frame::append(framed, frame::Type::kChunk, 0, payload);
    if (!file.append(framed, error)) return "";
  }
  return file.path();
}

void BM_ReadBack(benchmark::State& state) {
  constexpr size_t kChunks = 200;
  constexpr uint32_t kPerChunk = 500;
  std::string error;
  const std::string path = writeReadBackFile(kChunks, kPerChunk, error);
  if (path.empty()) {
    state.SkipWithError(error.c_str());
    return;
  }
  uint64_t records = 0;
  DecodedChunk chunk;
  for (auto _ : state) {
    TraceReader reader;
    if (!reader.open(path, error)) {
      state.SkipWithError(error.c_str());
      break;
    }
    while (reader.next(chunk)) records += chunk.records.size();
  }
  if (records != state.iterations() * kChunks * kPerChunk) state.SkipWithError("records lost in reading back");
  state.SetItemsProcessed(static_cast<int64_t>(records));
  state.counters["ns_per_record"] = benchmark::Counter(static_cast<double>(records), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  removeRunFiles();
}
BENCHMARK(BM_ReadBack)->Unit(benchmark::kMillisecond);

void BM_EncodeWrite(benchmark::State& state) { encodeBench<true>(state); }
void BM_EncodeOnly(benchmark::State& state) { encodeBench<false>(state); }
BENCHMARK(BM_EncodeWrite)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_EncodeOnly)->Unit(benchmark::kMicrosecond);

// Total of our records the flusher has written: each drain that writes rows adds exactly
// one ClockSample row and one chunk as long as no drain reaches chunk_records rows.
uint64_t collRowsWritten(const Flusher& flusher) {
  const FlusherStats s = flusher.stats();
  return s.records_written - s.chunks_written;
}

void BM_EndToEnd(benchmark::State& state) {
  constexpr size_t kRecords = 2'000'000;
  const auto records = fsdpRecords(16 * size_t{kDefaults.chunk_records});
  uint64_t retries = 0, written = 0, bytes = 0;
  for (auto _ : state) {
    state.PauseTiming();
    FlusherOptions options;
    options.dir = g_run_dir;
    Flusher flusher(options);
    if (!flusher.start()) {
      state.SkipWithError("a Flusher is already running");
      break;
    }
    state.ResumeTiming();
    for (size_t i = 0; i < kRecords; ++i) {
      while (record(records[i % records.size()]) == PushResult::kDropped) {
        ++retries;
        std::this_thread::yield();
      }
    }
    flusher.stop();
    state.PauseTiming();
    const FlusherStats stats = flusher.stats();
    written += kRecords;
    bytes += stats.bytes_written;
    if (stats.sinkFailedTotal() != 0) state.SkipWithError("the flusher failed to write records");
    removeRunFiles();
    state.ResumeTiming();
  }
  state.SetItemsProcessed(static_cast<int64_t>(written));
  state.counters["records_written_per_s"] = benchmark::Counter(static_cast<double>(written), benchmark::Counter::kIsRate);
  state.counters["push_retries"] = static_cast<double>(retries);
  state.counters["bytes_per_record"] = written ? static_cast<double>(bytes) / static_cast<double>(written) : 0;
}
BENCHMARK(BM_EndToEnd)->UseRealTime()->Iterations(1)->Unit(benchmark::kMillisecond);

void BM_OnDiskBytes(benchmark::State& state) {
  constexpr int kSteps = 2000;
  const uint64_t period_ns = static_cast<uint64_t>(state.range(0)) * 1'000'000u;
  for (auto _ : state) {
    FlusherOptions options;
    options.dir = g_run_dir;
    options.flush_period_ms = 3'600'000;  // drains come from the stream's clock below
    Flusher flusher(options);
    if (!flusher.start()) {
      state.SkipWithError("a Flusher is already running");
      break;
    }
    synthetic::FsdpStream stream({.rank = 0, .world_size = 8, .layers = 24, .seed = 1,
                                  .gpu_timer_tick_ns = static_cast<uint64_t>(state.range(1))});
    const size_t n = stream.opsPerStep() * kSteps;
    uint64_t pushed = 0, drops = 0, first_ns = 0, last_ns = 0, next_flush_ns = 0;
    bool stalled = false;
    for (size_t i = 0; i < n && !stalled; ++i) {
      const CollRecord r = stream.next();
      if (i == 0) next_flush_ns = (first_ns = r.cpu_start_ns) + period_ns;
      last_ns = r.cpu_start_ns;
      if (r.cpu_start_ns >= next_flush_ns) {
        next_flush_ns += period_ns;
        RingRegistry::global().doorbell().ring();
        const auto deadline = Clock::now() + std::chrono::seconds(5);
        while (collRowsWritten(flusher) < pushed && !(stalled = Clock::now() > deadline)) {
          std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
      }
      if (record(r) == PushResult::kDropped) {
        ++drops;
      } else {
        ++pushed;
      }
    }
    flusher.stop();
    if (stalled) {
      state.SkipWithError("the flusher did not drain within 5 s");
      break;
    }
    struct stat st {};
    if (stat(flusher.path().c_str(), &st) != 0) {
      state.SkipWithError("cannot stat the trace file");
      break;
    }
    // The file must hold every record pushed, else the size means nothing.
    TraceReader reader;
    std::string error;
    uint64_t colls = 0;
    if (!reader.open(flusher.path(), error)) {
      state.SkipWithError(error.c_str());
      break;
    }
    for (DecodedChunk chunk; reader.next(chunk);) {
      for (const RecordSlot& slot : chunk.records) colls += slot.kind == RecordKind::kColl;
    }
    if (colls != pushed || !reader.issues().empty()) {
      std::fprintf(stderr, "BM_OnDiskBytes: read back %llu collectives of %llu pushed, %zu issues%s%s\n",
                   static_cast<unsigned long long>(colls), static_cast<unsigned long long>(pushed),
                   reader.issues().size(), reader.issues().empty() ? "" : "; first: ",
                   reader.issues().empty() ? "" : reader.issues().front().message.c_str());
      state.SkipWithError("the file does not read back as written");
      break;
    }
    const FlusherStats stats = flusher.stats();
    state.counters["records"] = static_cast<double>(pushed);
    state.counters["file_bytes"] = static_cast<double>(st.st_size);
    state.counters["bytes_per_record"] = static_cast<double>(st.st_size) / static_cast<double>(pushed);
    state.counters["records_per_chunk"] = static_cast<double>(pushed) / static_cast<double>(stats.chunks_written);
    state.counters["stream_ops_per_s"] = static_cast<double>(pushed) * 1e9 / static_cast<double>(last_ns - first_ns);
    state.counters["drops"] = static_cast<double>(drops);
    removeRunFiles();
  }
}
// Args: {flush period ms, GPU timer tick ns}. 1024 ns is the tick of NVIDIA's sample
// pTimer values; 1 ns shows the cost of a nanosecond-exact GPU timer.
BENCHMARK(BM_OnDiskBytes)
    ->Args({200, 1024})->Args({100, 1024})->Args({1000, 1024})->Args({200, 1})
    ->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace commtrace

int main(int argc, char** argv) { return commtrace::bench::mainWithRunDir(argc, argv, commtrace::g_run_dir); }
