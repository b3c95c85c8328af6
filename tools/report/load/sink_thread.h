// A JoinedOpSink fed on a thread of its own: the joiner hands it ops in batches and goes on
// reading while it takes them, in the order they came (its results are the same as fed
// directly). The report puts its costliest analysis there (the root-cause walk of
// stragglers.h): on the joiner's thread it was half of the loading.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "tools/report/load/op_joiner.h"
#include "tools/report/load/run_model.h"

namespace commtrace::report {

class SinkThread : public JoinedOpSink {
 public:
  // A batch is handed over at this many members (56 bytes each; a transfer is two), or
  // before an instance that would take it past them (an instance wider than that is a batch
  // of its own), and at most kInFlight batches of kInFlight * kBatchMembers members in all
  // wait for the thread: past that, the joiner waits (what is held stays bounded, 15 MB,
  // where a 16,384-rank run's batches of one world instance each held 60 MB). At 8 batches
  // the joiner and the readers stalled behind the walk often enough that one of two cores
  // idled for a sixth of the loading (1,024 ranks x 10,000 ops).
  static constexpr size_t kBatchMembers = 1 << 13;
  static constexpr size_t kInFlight = 32;

  explicit SinkThread(JoinedOpSink& inner) : inner_(inner) {}
  ~SinkThread() override;
  SinkThread(const SinkThread&) = delete;
  SinkThread& operator=(const SinkThread&) = delete;

  void collective(const CollInstance& instance, std::span<const MemberView> members) override;
  void transfer(const P2pTransfer& transfer) override;
  // Told between ops: once the thread has taken those before (a followed run gains files rarely).
  void runWidth(size_t processes) override;
  // Waits until the inner sink has taken every op, then finishes it on this thread.
  void finish() override;
  // Returns once the inner sink has taken every op handed so far: it may then be read (a
  // snapshot, a merge). Const: what the inner sink holds at the end is the same either way;
  // only when the thread takes it differs. What the inner sink threw is thrown here (or by
  // finish()) once, and it is fed nothing more, finish() included.
  void settle() const;

 private:
  struct Batch {
    struct Op {
      bool transfer = false;
      uint32_t index = 0;  // into colls or transfers
      uint32_t first_member = 0;  // a collective's members
      uint32_t members = 0;
    };
    std::vector<Op> ops;
    std::vector<CollInstance> colls;
    std::vector<P2pTransfer> transfers;
    std::vector<MemberView> members;
    size_t size() const;  // in members, a transfer two
    void feed(JoinedOpSink& sink) const;
    void clear();
  };
  void handOver() const;
  void run() const;  // const as settle(), which starts it: the inner sink is reached by reference

  JoinedOpSink& inner_;
  mutable Batch filling_;
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  mutable std::deque<Batch> queue_;
  mutable size_t queued_members_ = 0;  // in queue_, as Batch::size()
  mutable std::vector<Batch> spare_;  // emptied batches, their storage reused
  mutable bool busy_ = false;         // the thread is feeding a batch
  mutable std::exception_ptr failure_;  // not yet thrown to the caller
  mutable bool failed_ = false;
  mutable bool stopping_ = false;
  mutable std::thread worker_;  // started at the first hand-over
};

}  // namespace commtrace::report
