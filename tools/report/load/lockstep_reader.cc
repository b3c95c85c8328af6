#include "tools/report/load/lockstep_reader.h"

#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

namespace commtrace::report {
namespace {

// Per reader thread, what may wait to be joined: so many batches, and so many rows of them
// (a chunk holds up to 16,384: 8 such were 40 MB queued on a 4-rank run).
constexpr size_t kBatchesInFlight = 8;
constexpr size_t kRowsInFlight = 32'768;

// Reader threads push, the joining thread takes what has piled up; pushing waits while the
// queue is full (in batches or in rows), so a slow join holds the readers back instead of
// piling up decoded rows.
// The joining thread is woken once half the queue has filled (or the readers are done), not
// for every chunk: one wake per 200 ms chunk of every process was tens of thousands of
// context switches a second.
class MessageQueue {
 public:
  MessageQueue(size_t capacity, size_t row_capacity, int producers)
      : capacity_(capacity), row_capacity_(row_capacity), wake_at_(std::max<size_t>(1, capacity / 2)), producers_(producers) {}

  // `rows`: what the message holds (one batch alone is let in, whatever its size).
  void push(LoadMessage message, size_t rows) {
    std::unique_lock lock(mutex_);
    not_full_.wait(lock, [&] { return messages_.empty() || (messages_.size() < capacity_ && rows_ + rows <= row_capacity_); });
    const bool was_worth_taking = worthTaking();
    rows_ += rows;
    messages_.push_back(std::move(message));
    if (!was_worth_taking && worthTaking()) not_empty_.notify_one();
  }
  void producerDone() {
    std::lock_guard lock(mutex_);
    --producers_;
    not_empty_.notify_one();
  }
  // Moves what is queued into `out`; false once every producer is done and nothing is left.
  bool takeAll(std::deque<LoadMessage>& out) {
    std::unique_lock lock(mutex_);
    not_empty_.wait(lock, [&] { return worthTaking() || producers_ == 0; });
    if (messages_.empty()) return false;
    out.swap(messages_);
    rows_ = 0;
    not_full_.notify_all();
    return true;
  }

 private:
  bool worthTaking() const { return messages_.size() >= wake_at_ || rows_ >= row_capacity_ / 2; }

  const size_t capacity_;
  const size_t row_capacity_;
  const size_t wake_at_;
  size_t rows_ = 0;
  int producers_;
  std::mutex mutex_;
  std::condition_variable not_full_, not_empty_;
  std::deque<LoadMessage> messages_;
};

// Which file to read next: the open file furthest behind in time that no thread is reading,
// unless it has run far ahead of another file in ops (FileLeads): then that other one, or,
// while a thread reads it, nothing until it comes back.
class FileSchedule {
 public:
  FileSchedule(const std::vector<std::string>& paths, SharedNames& names, const ProcessReadOptions& options, size_t max_open,
               FileLeads* leads)
      : paths_(paths), names_(names), options_(options), max_open_(std::max<size_t>(1, max_open)), readers_(paths.size()), leads_(leads) {
    while (next_unopened_ < paths_.size() && next_unopened_ < max_open_) admitNext();
  }

  // The next file to read, or -1 once every file is read or taken.
  int take() {
    std::unique_lock lock(mutex_);
    std::set<std::pair<uint64_t, int>>::iterator chosen;
    ready_changed_.wait(lock, [&] {
      if (ready_.empty()) return reading_ == 0;
      chosen = choose();
      return chosen != ready_.end();
    });
    if (ready_.empty()) return -1;
    const int file = chosen->second;
    ready_.erase(chosen);
    being_read_.push_back(file);
    ++reading_;
    return file;
  }
  FileLeads* leads() const { return leads_; }
  // The file's reader, opened on first use; nullptr (error set) if it cannot be opened.
  ProcessReader* reader(int file, std::string& error) {
    auto& r = readers_[static_cast<size_t>(file)];
    if (r) return r.get();
    r = std::make_unique<ProcessReader>(names_, file, options_);
    return r->open(paths_[static_cast<size_t>(file)], error) ? r.get() : nullptr;
  }
  // The file was read up to `position_ns`; or read to its end (its reader is freed and the
  // next file waiting for a turn is admitted).
  void give_back(int file, uint64_t position_ns, bool done) {
    std::lock_guard lock(mutex_);
    --reading_;
    std::erase(being_read_, file);
    if (done) {
      readers_[static_cast<size_t>(file)].reset();
      if (next_unopened_ < paths_.size()) admitNext();
    } else {
      ready_.emplace(position_ns, file);
    }
    ready_changed_.notify_all();
  }

 private:
  void admitNext() { ready_.emplace(0, static_cast<int>(next_unopened_++)); }

  // Of the first kScanned ready files in time order, the first not held back: one whose lead
  // passes by kLeadLimit the least lead of those and of the files being read. end(): each is
  // held back by a file being read, which is better waited for.
  static constexpr size_t kScanned = 64;
  static constexpr uint64_t kLeadLimit = 4096;
  std::set<std::pair<uint64_t, int>>::iterator choose() {
    if (leads_ == nullptr) return ready_.begin();
    // One reading of the scanned leads (the joining thread moves them meanwhile).
    std::array<uint64_t, kScanned> leads{};
    uint64_t least_ready = UINT64_MAX, least_read = UINT64_MAX;
    auto least = ready_.begin();
    size_t scanned = 0;
    for (auto it = ready_.begin(); it != ready_.end() && scanned < kScanned; ++it, ++scanned) {
      leads[scanned] = leads_->of(it->second);
      if (leads[scanned] < least_ready) least_ready = leads[scanned], least = it;
    }
    for (const int file : being_read_) least_read = std::min(least_read, leads_->of(file));
    const uint64_t least_lead = std::min(least_ready, least_read);
    auto it = ready_.begin();
    for (size_t n = 0; n < scanned; ++n, ++it)
      if (leads[n] <= least_lead + kLeadLimit) return it;  // not held back
    return least_read < least_ready ? ready_.end() : least;
  }

  const std::vector<std::string>& paths_;
  SharedNames& names_;
  const ProcessReadOptions& options_;
  const size_t max_open_;
  std::vector<std::unique_ptr<ProcessReader>> readers_;
  std::mutex mutex_;
  std::condition_variable ready_changed_;
  FileLeads* leads_;
  std::set<std::pair<uint64_t, int>> ready_;  // (position, file)
  std::vector<int> being_read_;
  size_t next_unopened_ = 0;
  int reading_ = 0;
};

int64_t rowsOf(const RecordBatch& batch) { return static_cast<int64_t>(batch.colls.size() + batch.p2ps.size()); }

// One chunk of the file, or its end.
void readOnce(FileSchedule& schedule, int file, MessageQueue& queue, DecodedChunk& scratch) {
  FileDone done;
  done.process = file;
  ProcessReader* reader = schedule.reader(file, done.error);
  if (reader != nullptr) {
    RecordBatch batch;
    if (reader->next(batch, scratch)) {
      const uint64_t position = batch.position_ns;
      const int64_t rows = rowsOf(batch);
      if (schedule.leads() != nullptr) schedule.leads()->queue(file, rows);
      queue.push(std::move(batch), static_cast<size_t>(rows));
      schedule.give_back(file, position, false);
      return;
    }
    done.opened = true;
    done.file_bytes = batch.file_bytes;
    reader->finish(done.info, done.timeline);
  }
  queue.push(std::move(done), 0);
  schedule.give_back(file, 0, true);
}

}  // namespace

size_t openFileBudget() {
  constexpr size_t kReserved = 64;  // the output file, the tool's own, a margin
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 1024 - kReserved;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  const rlim_t usable = limit.rlim_cur == RLIM_INFINITY ? 1'000'000 : limit.rlim_cur;
  return usable > 2 * kReserved ? static_cast<size_t>(usable) - kReserved : kReserved;
}

void readInLockstep(const std::vector<std::string>& paths, SharedNames& names, const ProcessReadOptions& options, unsigned threads,
                    size_t max_open, const std::function<void(LoadMessage&)>& deliver, FileLeads* leads) {
  const int readers = static_cast<int>(std::clamp<size_t>(threads, 1, std::max<size_t>(1, paths.size())));
  FileSchedule schedule(paths, names, options, max_open, leads);
  MessageQueue queue(kBatchesInFlight * static_cast<size_t>(readers), kRowsInFlight * static_cast<size_t>(readers), readers);
  std::vector<std::thread> workers;
  for (int t = 0; t < readers; ++t) {
    workers.emplace_back([&] {
      DecodedChunk scratch;
      for (int file = schedule.take(); file >= 0; file = schedule.take()) readOnce(schedule, file, queue, scratch);
      queue.producerDone();
    });
  }
  for (std::deque<LoadMessage> taken; queue.takeAll(taken); taken.clear()) {
    for (LoadMessage& message : taken) {
      deliver(message);
      if (const auto* batch = std::get_if<RecordBatch>(&message); batch != nullptr && leads != nullptr)
        leads->queue(batch->process, -rowsOf(*batch));
    }
  }
  for (std::thread& w : workers) w.join();
}

}  // namespace commtrace::report
