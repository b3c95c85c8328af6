#include "sink/flusher.h"

#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <exception>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "core/tsc_clock.h"
#include "ringbuffer/doorbell.h"
#include "ringbuffer/ringbuffer.h"
#include "sink/chunk_encoder.h"
#include "sink/frame.h"
#include "sink/process_metrics.h"
#include "sink/schema.h"

namespace commtrace {
namespace {

std::atomic<bool> g_flusher_active{false};

std::string hostName() {
  char host[HOST_NAME_MAX + 1] = {};
  if (gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') return "unknown-host";
  return host;
}

std::string programPath() {
  char path[PATH_MAX] = {};
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  return n > 0 ? std::string(path, static_cast<size_t>(n)) : std::string();
}

// Creates the file on the calling thread (a host thread), whose write of the file header
// past RLIMIT_FSIZE would raise SIGXFSZ and kill the host. The signal is blocked for the
// call, and one it raised is taken back before the host's mask returns.
bool createFileWithoutSigxfsz(TraceFile& file, const std::string& dir, const FileHeaderFields& header,
                              std::string& error) {
  sigset_t xfsz, previous, pending_before, pending_after;
  sigemptyset(&xfsz);
  sigaddset(&xfsz, SIGXFSZ);
  pthread_sigmask(SIG_BLOCK, &xfsz, &previous);
  sigpending(&pending_before);
  const bool created = file.create(dir, header, error);
  sigpending(&pending_after);
  if (!sigismember(&pending_before, SIGXFSZ) && sigismember(&pending_after, SIGXFSZ)) {
    const timespec no_wait{};
    sigtimedwait(&xfsz, nullptr, &no_wait);
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return created;
}

}  // namespace

bool isLiveKind(RecordKind kind) {
  const schema::Table* table = schema::tableFor(kind);
  return table != nullptr && table->live;
}

uint64_t FlusherStats::sinkFailedTotal() const {
  uint64_t total = 0;
  for (uint64_t n : sink_failed) total += n;
  return total;
}

// The flusher thread's private state: encoder, buffers and what it has reported.
struct Flusher::Worker {
  explicit Worker(Flusher& f) : flusher(f), encoder(StringTable::global()), digest_encoder(StringTable::global()) {
    if (!f.options_.prom_dir.empty()) {
      mkdir(f.options_.prom_dir.c_str(), 0755);  // made when its parent is there, as the collector makes it
      metrics = std::make_unique<ProcessMetrics>(StringTable::global(), f.options_.identity.rank);
      metrics_path = f.options_.prom_dir + "/commtrace-pid" + std::to_string(getpid()) + ".prom";
    }
  }

  // last: the drain at stop(). closing: the process stops recording, at stop() or by a
  // closing flush request: the drain's last chunk is written, records or not, marked so.
  void drainOnce(bool last, bool closing) {
    if (flusher.options_.before_drain != nullptr) flusher.options_.before_drain(last, flusher.file_.path());
    RingRegistry::global().forEachRing([&](ThreadRing& ring) {
      ring.drain([&](const RecordSlot& slot) { add(slot); });
      reportRingDrops(ring);
    });
    reportRinglessDrops();
    const uint64_t now = nowNs();
    const bool heartbeat = now - last_chunk_ns >= uint64_t{flusher.options_.heartbeat_ms} * 1'000'000u;
    if (encoder.rows() > 0 || closing || heartbeat) {
      addClockSample(encoder);
      writeChunk(closing);
      last_chunk_ns = now;
    }
    if (flusher.options_.digest != nullptr) sendDigest(now, closing);
    // Gone with the process's recording (a closing drain: exit, exec, a terminating signal),
    // not only at stop(): a job terminated during a hang left its ranks' files behind with a
    // frozen op in flight. A process that goes on writes it again next period.
    if (metrics != nullptr) writeMetrics(now, closing);
  }

  // Every period, and gone with the process's recording: counters that stopped counting
  // would read as a rank that stopped working.
  void writeMetrics(uint64_t now, bool closing) {
    if (closing) {
      unlink(metrics_path.c_str());
      return;
    }
    if (now - last_metrics_ns < uint64_t{flusher.options_.prom_period_ms} * 1'000'000u) return;
    last_metrics_ns = now;
    metrics->setDigestDropped(flusher.stats_.digest_records_dropped.load(std::memory_order_relaxed));
    if (metrics->writeFile(metrics_path, now)) return;
    std::fprintf(stderr, "commtrace: cannot write %s (%s); this process writes no metrics file\n", metrics_path.c_str(), std::strerror(errno));
    metrics.reset();
  }

  void add(const RecordSlot& slot) {
    if (metrics != nullptr) metrics->add(slot);
    encoder.add(slot);
    if (encoder.rows() >= flusher.options_.chunk_records) writeChunk();
    if (flusher.options_.digest == nullptr) return;
    if (slot.kind == RecordKind::kCommInfo && comm_infos.size() < kMaxCommInfos) comm_infos.push_back(slot);
    if (flusher.options_.digest->keyed() && isLiveKind(slot.kind)) {
      digest_encoder.add(slot);
      if (digest_encoder.rows() >= kMaxDigestRecords) sendDigest(nowNs(), false, /*full=*/true);
    }
  }

  // Moves the connection on at every drain; a digest every period (at once when full or
  // closing), its clock sample the collector's heartbeat of this process. While the link is
  // being made the records wait (up to kMaxDigestRecords); each new connection is told the
  // process's communicators again, which were recorded once, at their creation.
  void sendDigest(uint64_t now, bool closing, bool full = false) {
    DigestSender& link = *flusher.options_.digest;
    link.pump(now);
    if (!link.keyed()) return;
    if (!closing && !full && now - last_digest_ns < uint64_t{flusher.options_.digest_period_ms} * 1'000'000u) return;
    if (!link.ready() && !closing && !full) return;
    last_digest_ns = now;
    if (link.needsHeader())
      for (const RecordSlot& info : comm_infos) digest_encoder.add(info);
    addClockSample(digest_encoder);
    const uint32_t rows = digest_encoder.rows();
    digest_encoder.finish(digest_index, closing, payload);
    digest_encoder.restartStringTable();
    framed.clear();
    if (link.needsHeader()) framed = flusher.header_frame_;
    frame::append(framed, frame::Type::kChunk, 0, payload);
    if (link.offer(framed, now)) ++digest_index;
    else flusher.stats_.digest_records_dropped.fetch_add(rows - 1, std::memory_order_relaxed);  // not our clock sample
  }
  static constexpr uint32_t kMaxDigestRecords = 8192;
  static constexpr size_t kMaxCommInfos = 4096;
  std::vector<RecordSlot> comm_infos;  // every communicator the process recorded, for each new connection

  void reportRingDrops(ThreadRing& ring) {
    ring.forEachNewDropCount([&](RecordKind kind, uint64_t cumulative) {
      RecordSlot slot{};
      slot.kind = RecordKind::kDropSummary;
      slot.thread = static_cast<uint32_t>(gettid());
      slot.payload.drop_summary = {cumulative, 0, nowNs(), ring.thread(), static_cast<uint8_t>(kind)};
      add(slot);
    });
  }

  // Records of threads without a ring, cumulative per kind, as thread kRinglessThread.
  void reportRinglessDrops() {
    for (int k = 1; k < kRecordKindCount; ++k) {
      const uint64_t dropped = RingRegistry::global().ringlessDrops(static_cast<RecordKind>(k));
      if (dropped == reported_ringless[k]) continue;
      reported_ringless[k] = dropped;
      RecordSlot slot{};
      slot.kind = RecordKind::kDropSummary;
      slot.thread = static_cast<uint32_t>(gettid());
      slot.payload.drop_summary = {dropped, 0, nowNs(), kRinglessThread, static_cast<uint8_t>(k)};
      add(slot);
    }
  }

  // Sink failures are reported as thread 0, cumulative per kind, in every chunk written
  // until one of them reaches the file.
  void reportSinkFailures() {
    for (int k = 1; k < kRecordKindCount; ++k) {
      const uint64_t failed = flusher.stats_.sink_failed[k].load(std::memory_order_relaxed);
      if (failed == reported_sink_failed[k]) continue;
      reporting_sink_failed[k] = failed;
      RecordSlot slot{};
      slot.kind = RecordKind::kDropSummary;
      slot.thread = static_cast<uint32_t>(gettid());
      slot.payload.drop_summary = {0, failed, nowNs(), 0, static_cast<uint8_t>(k)};
      encoder.add(slot);
    }
  }

  void addClockSample(ChunkEncoder& to) {
    RecordSlot slot{};
    slot.kind = RecordKind::kClockSample;
    slot.thread = static_cast<uint32_t>(gettid());
    // The CPU reading is the middle of the ones taken around CUPTI's, which may be a call.
    const uint64_t before = nowNs();
    const uint64_t cupti_ns = flusher.options_.cupti_clock != nullptr ? flusher.options_.cupti_clock() : 0;
    const uint64_t after = cupti_ns != 0 ? nowNs() : before;
    slot.payload.clock_sample = {before + (after - before) / 2, realtimeNs(), 0, cupti_ns, -1};
    to.add(slot);
  }

  void writeChunk(bool closing = false) {
    reporting_sink_failed = reported_sink_failed;
    reportSinkFailures();
    std::array<uint32_t, kRecordKindCount> rows{};
    for (int k = 1; k < kRecordKindCount; ++k) rows[k] = encoder.rows(static_cast<RecordKind>(k));
    const uint32_t total = encoder.rows();
    encoder.finish(chunk_index, closing, payload);
    framed.clear();
    frame::append(framed, frame::Type::kChunk, 0, payload);

    std::string error;
    if (!flusher.file_.isOpen()) createLate(closing);
    if (flusher.file_.isOpen() && flusher.file_.append(framed, error)) {
      ++chunk_index;
      reported_sink_failed = reporting_sink_failed;
      auto& s = flusher.stats_;
      s.records_written.fetch_add(total, std::memory_order_relaxed);
      s.chunks_written.fetch_add(1, std::memory_order_relaxed);
      s.bytes_written.fetch_add(framed.size(), std::memory_order_relaxed);
      return;
    }
    encoder.restartStringTable();
    for (int k = 1; k < kRecordKindCount; ++k) {
      flusher.stats_.sink_failed[k].fetch_add(rows[k], std::memory_order_relaxed);
    }
    if (!error.empty() && !warned) {
      warned = true;
      std::fprintf(stderr, "%s; records are counted as dropped until a write succeeds\n", error.c_str());
    }
  }

  // A file that could not be created at the start (a full disk, a directory not there yet)
  // is tried again at each chunk, backing off from one period to a minute (the last chunk
  // tries regardless): the run is not lost for a moment without space, and what was dropped
  // meanwhile is reported in it.
  void createLate(bool last_chance) {
    const uint64_t now = nowNs();
    if (now < next_create_ns && !last_chance) return;
    std::string error;
    if (flusher.file_.create(flusher.options_.dir, flusher.header_, error)) {
      std::fprintf(stderr, "commtrace: created %s; what was recorded before is counted as dropped in it\n", flusher.file_.path().c_str());
      return;
    }
    create_backoff_ns = std::min<uint64_t>(std::max<uint64_t>(2 * create_backoff_ns, uint64_t{flusher.options_.flush_period_ms} * 1'000'000u),
                                           kMaxCreateBackoffNs);
    next_create_ns = now + create_backoff_ns;
  }
  static constexpr uint64_t kMaxCreateBackoffNs = 60'000'000'000;
  uint64_t next_create_ns = 0, create_backoff_ns = 0;

  Flusher& flusher;
  std::unique_ptr<ProcessMetrics> metrics;  // with FlusherOptions::prom_dir
  std::string metrics_path;
  uint64_t last_metrics_ns = 0;
  ChunkEncoder encoder;
  ChunkEncoder digest_encoder;
  wire::Bytes payload, framed;
  uint64_t chunk_index = 0;
  uint64_t digest_index = 0;
  uint64_t last_digest_ns = 0;
  uint64_t last_chunk_ns = nowNs();
  std::array<uint64_t, kRecordKindCount> reported_sink_failed{}, reporting_sink_failed{};
  std::array<uint64_t, kRecordKindCount> reported_ringless{};
  bool warned = false;
};

Flusher::Flusher(FlusherOptions options) : options_(std::move(options)), file_(options_.write) {}

Flusher::~Flusher() { stop(); }

bool Flusher::start() {
  bool expected = false;
  if (!g_flusher_active.compare_exchange_strong(expected, true)) return false;

  FileHeaderFields& header = header_;
  header.identity = options_.identity;
  header.host = hostName();
  header.pid = getpid();
  header.start_monotonic_ns = nowNs();
  header.start_realtime_ns = realtimeNs();
  header.program = programPath();
  header.ring_records = RingRegistry::global().ringRecords();
  header.flush_period_ms = options_.flush_period_ms;
  header.exit_unseen = options_.exit_unseen;
  header_frame_.clear();
  frame::append(header_frame_, frame::Type::kFileHeader, 0, encodeFileHeader(header));
  std::string error;
  if (!createFileWithoutSigxfsz(file_, options_.dir, header, error)) {
    std::fprintf(stderr, "%s; records are counted as dropped until the file can be created (retried)\n", error.c_str());
  }

  // The thread starts with every signal blocked, so signals meant for the host program
  // (and SIGXFSZ from our own writes) are never delivered to it.
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  running_ = true;
  RingRegistry::global().flushRequests().setServing(true);  // a request made before run() waits for its first drain
  const char* failure = nullptr;
  try {
    thread_ = std::thread([this] { run(); });
  } catch (const std::exception& e) {  // at a process limit (RLIMIT_NPROC), without memory for its stack
    failure = e.what();
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (failure == nullptr) return true;
  std::fprintf(stderr, "commtrace: cannot start the recording thread (%s); this process is not recorded\n", failure);
  running_ = false;
  RingRegistry::global().flushRequests().setServing(false);
  RingRegistry::global().refuseRings();
  file_.discard();
  g_flusher_active = false;
  return false;
}

bool Flusher::stop(uint32_t timeout_ms) {
  if (!running_.exchange(false)) return true;
  stopping_ = true;
  RingRegistry::global().doorbell().ring();
  const uint64_t deadline = nowNs() + uint64_t{timeout_ms} * 1000000u;
  while (finished_.load(std::memory_order_acquire) == 0) {
    const uint64_t now = nowNs();
    if (now >= deadline) {
      // Stuck on a slow disk: the thread keeps this object, which must outlive it.
      thread_.detach();
      return false;
    }
    futexWait(finished_, 0, deadline - now);
  }
  thread_.join();
  g_flusher_active = false;
  return true;
}

// What the recorder cannot allocate (under RLIMIT_AS, say) ends recording, not the host:
// the rings are refused from then on and whoever waits for a flush is answered.
void Flusher::run() {
  try {
    drainUntilStopped();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "commtrace: the recorder failed (%s); this process records no more\n", e.what());
    RingRegistry::global().refuseRings();
    FlushRequests& requests = RingRegistry::global().flushRequests();
    requests.setServing(false);
    requests.publishServed(requests.ticketToServe());
  }
  finished_.store(1, std::memory_order_release);
  futexWakeAll(finished_);
}

void Flusher::drainUntilStopped() {
  Worker worker(*this);
  FlushRequests& requests = RingRegistry::global().flushRequests();
  const uint64_t period_ns = static_cast<uint64_t>(options_.flush_period_ms) * 1000000u;
  steerProcessTscClock(period_ns);
  while (!stopping_.load(std::memory_order_acquire)) {
    RingRegistry::global().doorbell().wait(period_ns);
    steerProcessTscClock(period_ns);
    const bool closing = requests.takeClosing();  // before the ticket: see FlushRequests
    const uint32_t requested = requests.ticketToServe();
    worker.drainOnce(false, closing);
    requests.publishServed(requested);
  }
  requests.setServing(false);
  worker.drainOnce(true, true);  // what was pushed before stop() is in the file, its last chunk marked closing
  // Answers every ticket, also one taken while serving was being switched off: nothing
  // will drain after this, so no requester should wait its whole timeout for it.
  requests.publishServed(requests.ticketToServe());
}

void Flusher::forgetAfterFork() { g_flusher_active.store(false, std::memory_order_relaxed); }

FlusherStats Flusher::stats() const {
  FlusherStats out;
  out.records_written = stats_.records_written.load(std::memory_order_relaxed);
  out.chunks_written = stats_.chunks_written.load(std::memory_order_relaxed);
  out.bytes_written = stats_.bytes_written.load(std::memory_order_relaxed);
  out.digest_records_dropped = stats_.digest_records_dropped.load(std::memory_order_relaxed);
  for (int k = 0; k < kRecordKindCount; ++k) out.sink_failed[k] = stats_.sink_failed[k].load(std::memory_order_relaxed);
  return out;
}

}  // namespace commtrace
