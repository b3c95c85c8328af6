#include "tools/report/load/lockstep_reader.h"

#include <sys/resource.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

namespace commtrace::report {
namespace {

constexpr size_t kBatchesInFlight = 8;  // per thread: bounds the rows waiting to be joined

// Reader threads push, the joining thread takes what has piled up; pushing waits while the
// queue is full, so a slow join holds the readers back instead of piling up decoded rows.
// The joining thread is woken once half the queue has filled (or the readers are done), not
// for every chunk: one wake per 200 ms chunk of every process was tens of thousands of
// context switches a second.
class MessageQueue {
 public:
  MessageQueue(size_t capacity, int producers) : capacity_(capacity), wake_at_(std::max<size_t>(1, capacity / 2)), producers_(producers) {}

  void push(LoadMessage message) {
    std::unique_lock lock(mutex_);
    not_full_.wait(lock, [&] { return messages_.size() < capacity_; });
    messages_.push_back(std::move(message));
    if (messages_.size() == wake_at_) not_empty_.notify_one();
  }
  void producerDone() {
    std::lock_guard lock(mutex_);
    --producers_;
    not_empty_.notify_one();
  }
  // Moves what is queued into `out`; false once every producer is done and nothing is left.
  bool takeAll(std::deque<LoadMessage>& out) {
    std::unique_lock lock(mutex_);
    not_empty_.wait(lock, [&] { return messages_.size() >= wake_at_ || producers_ == 0; });
    if (messages_.empty()) return false;
    out.swap(messages_);
    not_full_.notify_all();
    return true;
  }

 private:
  const size_t capacity_;
  const size_t wake_at_;
  int producers_;
  std::mutex mutex_;
  std::condition_variable not_full_, not_empty_;
  std::deque<LoadMessage> messages_;
};

// Which file to read next: the open file furthest behind that no thread is reading.
class FileSchedule {
 public:
  FileSchedule(const std::vector<std::string>& paths, SharedNames& names, const ProcessReadOptions& options, size_t max_open)
      : paths_(paths), names_(names), options_(options), max_open_(std::max<size_t>(1, max_open)), readers_(paths.size()) {
    while (next_unopened_ < paths_.size() && next_unopened_ < max_open_) admitNext();
  }

  // The next file to read, or -1 once every file is read or taken.
  int take() {
    std::unique_lock lock(mutex_);
    ready_changed_.wait(lock, [&] { return !ready_.empty() || reading_ == 0; });
    if (ready_.empty()) return -1;
    const int file = ready_.begin()->second;
    ready_.erase(ready_.begin());
    ++reading_;
    return file;
  }
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

  const std::vector<std::string>& paths_;
  SharedNames& names_;
  const ProcessReadOptions& options_;
  const size_t max_open_;
  std::vector<std::unique_ptr<ProcessReader>> readers_;
  std::mutex mutex_;
  std::condition_variable ready_changed_;
  std::set<std::pair<uint64_t, int>> ready_;  // (position, file)
  size_t next_unopened_ = 0;
  int reading_ = 0;
};

// One chunk of the file, or its end.
void readOnce(FileSchedule& schedule, int file, MessageQueue& queue, DecodedChunk& scratch) {
  FileDone done;
  done.process = file;
  ProcessReader* reader = schedule.reader(file, done.error);
  if (reader != nullptr) {
    RecordBatch batch;
    if (reader->next(batch, scratch)) {
      const uint64_t position = batch.position_ns;
      queue.push(std::move(batch));
      schedule.give_back(file, position, false);
      return;
    }
    done.opened = true;
    done.file_bytes = batch.file_bytes;
    reader->finish(done.info, done.timeline);
  }
  queue.push(std::move(done));
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
                    size_t max_open, const std::function<void(LoadMessage&)>& deliver) {
  const int readers = static_cast<int>(std::clamp<size_t>(threads, 1, std::max<size_t>(1, paths.size())));
  FileSchedule schedule(paths, names, options, max_open);
  MessageQueue queue(kBatchesInFlight * static_cast<size_t>(readers), readers);
  std::vector<std::thread> workers;
  for (int t = 0; t < readers; ++t) {
    workers.emplace_back([&] {
      DecodedChunk scratch;
      for (int file = schedule.take(); file >= 0; file = schedule.take()) readOnce(schedule, file, queue, scratch);
      queue.producerDone();
    });
  }
  for (std::deque<LoadMessage> taken; queue.takeAll(taken); taken.clear()) {
    for (LoadMessage& message : taken) deliver(message);
  }
  for (std::thread& w : workers) w.join();
}

}  // namespace commtrace::report
