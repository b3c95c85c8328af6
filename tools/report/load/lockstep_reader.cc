#include "tools/report/load/lockstep_reader.h"

#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

namespace commtrace::report {
namespace {

// What the threads may decode ahead of the joiner: so many batches of each file, and so many
// rows in all per thread (a chunk holds up to 16,384) beyond the batch the joiner waits for.
constexpr size_t kBatchesAhead = 2;
constexpr size_t kRowsAhead = 32'768;
// Batches the joiner is done with, kept for the decoders to fill again: a batch is made on a
// decoding thread and let go on the joining one, and made new each time, every chunk's rows
// were allocated on one thread and freed on another, past both threads' malloc caches (the
// arena locks contended: a sixth of a 16,384-rank report's CPU went to malloc and free).
constexpr size_t kSpareBatches = 4;

size_t rowsOf(const LoadMessage& message) {
  const auto* batch = std::get_if<RecordBatch>(&message);
  return batch == nullptr ? 0 : batch->colls.size() + batch->p2ps.size();
}

// A file's decoded messages not taken yet, at most kBatchesAhead, held in place: a deque of
// them took a heap block for every message.
class AheadQueue {
 public:
  bool empty() const { return count_ == 0; }
  size_t size() const { return count_; }
  void push(LoadMessage&& message) { slots_[(first_ + count_++) % kBatchesAhead] = std::move(message); }
  LoadMessage& front() { return slots_[first_]; }
  void pop() {
    first_ = (first_ + 1) % kBatchesAhead;
    --count_;
  }

 private:
  std::array<LoadMessage, kBatchesAhead> slots_;
  uint8_t first_ = 0, count_ = 0;
};

// The files and what the threads have decoded of each ahead of the joiner, and two choices:
// which file's batch the joiner takes next, the open file furthest behind in time unless it
// has run far ahead of another in ops (FileLeads), made from what it has taken alone; and
// which file a thread decodes next: the one the joiner waits for, else the one decoded least
// far. (Chosen by the threads as they finished, the order changed from one report of the
// same files to the next, and the root-cause walk's figures with it.)
class LockstepFiles {
 public:
  LockstepFiles(const std::vector<std::string>& paths, SharedNames& names, const ProcessReadOptions& options, size_t max_open,
                FileLeads* leads, unsigned threads)
      : paths_(paths), names_(names), options_(options), leads_(leads), rows_budget_(kRowsAhead * threads), files_(paths.size()) {
    // More files than descriptors: every file is still read in step, through a pool that
    // closes the least recently read file's descriptor for another's and reopens it when
    // its turn comes. (Read a budget's worth after another, the files did not move
    // together: every instance waited for the last file, and the figures of the streamed
    // analyses, which keep windows of the run, differed from the same run's under a higher
    // limit: 1,024 files under 200 descriptors named the straggler's waiting caused 126 s
    // instead of 156 s.)
    if (paths.size() > std::max<size_t>(1, max_open)) descriptors_ = std::make_unique<DescriptorPool>(max_open);
    for (size_t f = 0; f < files_.size(); ++f) admitNext();
  }

  // The joining thread: the next file's next batch (or its end); false once every file is delivered.
  bool take(LoadMessage& message) {
    std::unique_lock lock(mutex_);
    const int f = chooseNext();
    if (f < 0) return false;
    File& file = files_[static_cast<size_t>(f)];
    if (file.ahead.empty()) {
      wanted_ = f;
      if (idle_decoders_ > 0) work_.notify_all();
      decoded_.wait(lock, [&] { return !file.ahead.empty(); });
      wanted_ = -1;
    }
    if (auto* done_with = std::get_if<RecordBatch>(&message); done_with != nullptr && spare_.size() < kSpareBatches)
      spare_.push_back(std::move(*done_with));
    message = std::move(file.ahead.front());
    file.ahead.pop();
    const bool was_over_budget = rows_ahead_ >= rows_budget_;
    rows_ahead_ -= rowsOf(message);
    taken_.erase({file.taken_ns, f});
    bool more_work = was_over_budget;
    if (const auto* batch = std::get_if<RecordBatch>(&message)) {
      file.taken_ns = std::max(file.taken_ns, batch->position_ns);
      taken_.emplace(file.taken_ns, f);
    } else if (next_unadmitted_ < files_.size()) {
      admitNext();
      more_work = true;
    }
    if (file.ahead.size() + 1 == kBatchesAhead) decodable(f), more_work = true;
    // A decoder is woken only when there is work for it: one for each chunk taken was tens
    // of thousands of context switches a second.
    if (idle_decoders_ > 0 && more_work) work_.notify_one();
    return true;
  }

  // A decoding thread: decodes chunks until every file is read (or stop()).
  void decode() {
    DecodedChunk scratch;
    std::unique_lock lock(mutex_);
    for (;;) {
      int f = -1;
      ++idle_decoders_;
      work_.wait(lock, [&] { return stopping_ || (f = chooseToDecode()) >= 0 || read_out_ == files_.size(); });
      --idle_decoders_;
      if (f < 0) return;
      File& file = files_[static_cast<size_t>(f)];
      decodable_.erase({file.decoded_ns, f});
      file.being_read = true;
      RecordBatch storage;  // a spare batch's rows, when there is one
      if (!spare_.empty()) {
        storage = std::move(spare_.back());
        spare_.pop_back();
      }
      lock.unlock();
      LoadMessage message = decodeOnce(f, file, scratch, storage);
      lock.lock();
      file.being_read = false;
      rows_ahead_ += rowsOf(message);
      if (const auto* batch = std::get_if<RecordBatch>(&message)) {
        file.decoded_ns = std::max(file.decoded_ns, batch->position_ns);
        file.ahead.push(std::move(message));
        decodable(f);
      } else {
        file.ahead.push(std::move(message));
        file.read_out = true;
        if (++read_out_ == files_.size()) work_.notify_all();  // the idle decoders end
      }
      if (wanted_ == f) decoded_.notify_one();
    }
  }

  void stop() {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    work_.notify_all();
  }

 private:
  struct File {
    std::unique_ptr<ProcessReader> reader;  // from the first decode to the last
    AheadQueue ahead;                       // decoded, not taken yet
    uint64_t taken_ns = 0;                  // the position of the latest batch taken
    uint64_t decoded_ns = 0;                // of the latest decoded
    bool being_read = false, read_out = false;
  };

  void admitNext() {
    const int f = static_cast<int>(next_unadmitted_++);
    taken_.emplace(0, f);
    decodable_.emplace(0, f);
  }
  // A file that may be decoded further, unless it is already listed, read or being read.
  void decodable(int f) {
    const File& file = files_[static_cast<size_t>(f)];
    if (!file.read_out && !file.being_read && file.ahead.size() < kBatchesAhead) decodable_.emplace(file.decoded_ns, f);
  }

  // Of the first kScanned files in time order, the first not held back: one whose lead passes
  // by kLeadLimit the least lead of those.
  static constexpr size_t kScanned = 64;
  static constexpr uint64_t kLeadLimit = 4096;
  int chooseNext() const {
    if (taken_.empty()) return -1;
    if (leads_ == nullptr) return taken_.begin()->second;
    std::array<uint64_t, kScanned> leads{};
    uint64_t least = UINT64_MAX;
    size_t scanned = 0;
    for (auto it = taken_.begin(); it != taken_.end() && scanned < kScanned; ++it, ++scanned) {
      leads[scanned] = leads_->of(it->second);
      least = std::min(least, leads[scanned]);
    }
    auto it = taken_.begin();
    for (size_t n = 0; n < scanned; ++n, ++it)
      if (leads[n] <= least + kLeadLimit) return it->second;
    return -1;  // not reached: the least lead is within the limit
  }

  // The file the joiner waits for; else, within the rows' budget, the one decoded least far.
  int chooseToDecode() const {
    if (wanted_ >= 0) {
      const File& file = files_[static_cast<size_t>(wanted_)];
      if (file.ahead.empty() && !file.being_read && !file.read_out) return wanted_;
    }
    if (rows_ahead_ >= rows_budget_ || decodable_.empty()) return -1;
    return decodable_.begin()->second;
  }

  // The file's next chunk into `batch` (a spare one's storage, or none), else its end.
  LoadMessage decodeOnce(int f, File& file, DecodedChunk& scratch, RecordBatch& batch) {
    std::string error;
    if (!file.reader) {
      file.reader = std::make_unique<ProcessReader>(names_, f, options_);
      if (!file.reader->open(paths_[static_cast<size_t>(f)], error, descriptors_.get())) file.reader.reset();
    }
    if (file.reader && file.reader->next(batch, scratch)) return std::move(batch);
    auto done = std::make_unique<FileDone>();
    done->process = f;
    done->error = std::move(error);
    if (file.reader) {
      done->opened = true;
      done->file_bytes = batch.file_bytes;
      file.reader->finish(done->info, done->timeline);
      file.reader.reset();
    }
    return done;
  }

  const std::vector<std::string>& paths_;
  std::unique_ptr<DescriptorPool> descriptors_;  // when there are more files than max_open
  SharedNames& names_;
  const ProcessReadOptions& options_;
  FileLeads* leads_;
  const size_t rows_budget_;
  std::vector<File> files_;
  std::mutex mutex_;
  std::condition_variable decoded_, work_;
  std::set<std::pair<uint64_t, int>> taken_;      // (taken_ns, file): admitted, not delivered whole
  std::set<std::pair<uint64_t, int>> decodable_;  // (decoded_ns, file): admitted, not read, not being read, room ahead
  std::vector<RecordBatch> spare_;                // let go by the joiner, for the decoders to fill again
  size_t next_unadmitted_ = 0;
  size_t read_out_ = 0;
  size_t rows_ahead_ = 0;
  int wanted_ = -1;  // the file whose batch the joiner waits for
  int idle_decoders_ = 0;
  bool stopping_ = false;
};

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
  const unsigned decoders = static_cast<unsigned>(std::clamp<size_t>(threads, 1, std::max<size_t>(1, paths.size())));
  LockstepFiles files(paths, names, options, max_open, leads, decoders);
  // Stopped and joined however the joining ends (deliver may throw).
  struct Decoders {
    LockstepFiles& files;
    std::vector<std::jthread> threads;
    ~Decoders() { files.stop(); }  // then `threads` join
  } workers{files, {}};
  for (unsigned t = 0; t < decoders; ++t) workers.threads.emplace_back([&] { files.decode(); });
  for (LoadMessage message; files.take(message);) deliver(message);
}

}  // namespace commtrace::report
