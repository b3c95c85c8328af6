#include "tools/report/load/sink_thread.h"

namespace commtrace::report {

SinkThread::~SinkThread() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (worker_.joinable()) worker_.join();
}

size_t SinkThread::Batch::size() const { return members.size() + 2 * transfers.size(); }

void SinkThread::collective(const CollInstance& instance, std::span<const MemberView> members) {
  if (!filling_.ops.empty() && filling_.size() + members.size() > kBatchMembers) handOver();
  filling_.ops.push_back({false, static_cast<uint32_t>(filling_.colls.size()), static_cast<uint32_t>(filling_.members.size()),
                          static_cast<uint32_t>(members.size())});
  filling_.colls.push_back(instance);
  filling_.members.insert(filling_.members.end(), members.begin(), members.end());
  if (filling_.size() >= kBatchMembers) handOver();
}

void SinkThread::transfer(const P2pTransfer& transfer) {
  filling_.ops.push_back({true, static_cast<uint32_t>(filling_.transfers.size()), 0, 0});
  filling_.transfers.push_back(transfer);
  if (filling_.size() >= kBatchMembers) handOver();
}

void SinkThread::runWidth(size_t processes) {
  settle();
  if (!failed_) inner_.runWidth(processes);
}

void SinkThread::finish() {
  settle();
  if (!failed_) inner_.finish();
}

void SinkThread::Batch::feed(JoinedOpSink& sink) const {
  for (const Op& op : ops) {
    if (op.transfer) {
      sink.transfer(transfers[op.index]);
      continue;
    }
    sink.collective(colls[op.index], std::span(members).subspan(op.first_member, op.members));
  }
}

void SinkThread::Batch::clear() {
  ops.clear();
  colls.clear();
  transfers.clear();
  members.clear();
  // A batch of one instance wider than a batch (a 16,384-rank world communicator's) gives its
  // room back: kept by every spare batch, it held 60 MB.
  if (members.capacity() > kBatchMembers) std::vector<MemberView>().swap(members);
}

void SinkThread::handOver() const {
  if (filling_.ops.empty()) return;
  std::unique_lock lock(mutex_);
  const size_t members = filling_.size();
  changed_.wait(lock, [&] { return queue_.empty() || (queue_.size() < kInFlight && queued_members_ + members <= kInFlight * kBatchMembers); });
  queued_members_ += members;
  queue_.push_back(std::move(filling_));
  if (spare_.empty()) {
    filling_ = Batch{};
  } else {
    filling_ = std::move(spare_.back());
    spare_.pop_back();
  }
  if (!worker_.joinable()) worker_ = std::thread(&SinkThread::run, this);
  lock.unlock();
  changed_.notify_all();
}

void SinkThread::settle() const {
  handOver();
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return queue_.empty() && !busy_; });
  if (failure_) std::rethrow_exception(std::exchange(failure_, nullptr));
}

void SinkThread::run() const {
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;
    Batch batch = std::move(queue_.front());
    queue_.pop_front();
    queued_members_ -= batch.size();
    busy_ = true;
    lock.unlock();
    changed_.notify_all();  // room in the queue
    if (!failed_) {
      try {
        batch.feed(inner_);
      } catch (...) {
        failed_ = true;  // both read under the lock once busy_ falls
        failure_ = std::current_exception();
      }
    }
    batch.clear();
    lock.lock();
    spare_.push_back(std::move(batch));
    busy_ = false;
    changed_.notify_all();
  }
}

}  // namespace commtrace::report
