#include "tools/report/analyses/wait_attribution.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <tuple>

#include "core/nccl_vocab.h"

#include "tools/report/load/stats.h"

namespace commtrace::report {
namespace {

// Lateness closer than this is a tie, not a delay (lateness.h's kTieNs).
constexpr double kTieLatenessNs = static_cast<double>(kTieNs);

// Whether an op of a process is the one a gap of `gap` before `start` is measured from: it
// started earlier and ended `gap` before, or, for a gap of 0, was still running then. The
// ledger's lookup and the waiters' wake both ask it.
bool measuredFrom(uint64_t op_start, uint64_t op_end, uint64_t start, uint64_t gap) {
  return op_start < start && (gap == 0 ? op_end >= start : op_end + gap == start);
}

bool gapKnown(const SyncMember& m) { return m.gap_ns != MemberView::kNoGap && m.peer_gap_ns >= 0; }

// The part of the member's gap over its peers' typical gap: the delay it created before the op.
double createdDelayNs(const SyncMember& m) {
  return gapKnown(m) ? std::max(0.0, static_cast<double>(m.gap_ns) - m.peer_gap_ns) : 0.0;
}

// The same against its seat's in sibling communicators, for a group replayed whole: inside
// the group's own communicator every peer is as late.
double groupCreatedDelayNs(const SyncMember& m) {
  if (m.gap_ns == MemberView::kNoGap || m.sibling_gap_ns < 0) return createdDelayNs(m);
  return std::max(createdDelayNs(m), static_cast<double>(m.gap_ns) - m.sibling_gap_ns);
}

}  // namespace

// A last arriver's lateness (against the waiters' arrival, on average) in three shares: the
// part its gap before the op is longer than the waiters' gaps explains, of which what exceeds
// its peers' typical gap it created; of the rest, what it was held up more than the waiters
// before (its held time over theirs: the lateness its earlier ops' waits passed on) it
// inherited; what is left is the job's shape (a pipeline stage computes while the next idles,
// a rank has less to do before the op), charged to nobody. Its first op, or one without gaps
// to compare, has nothing to measure: the job's start, or its shape.
WaitAttribution::LatenessSplit WaitAttribution::splitLateness(const SyncMember& m, double lateness, double waiter_gap, double held_more) {
  const double inherited = std::clamp(held_more, 0.0, lateness);
  if (m.gap_ns == MemberView::kNoGap) return {0, inherited / lateness};
  const double gap = static_cast<double>(m.gap_ns);
  const double typical = m.peer_gap_ns >= 0 ? m.peer_gap_ns : waiter_gap;
  const double against = waiter_gap >= 0 ? waiter_gap : typical;
  if (against < 0) return {0, inherited / lateness};
  const double explained = std::clamp(gap - against, 0.0, lateness);
  const double created = std::clamp(gap - typical, 0.0, explained);
  return {created / lateness, std::min(inherited, lateness - explained) / lateness};
}

void Blame::add(const DelayOrigin& origin, double weight, NameId path) {
  if (weight <= 0) return;
  for (size_t i = 0; i < size_; ++i) {
    if (parts_[i].origin == origin) {
      if (weight > parts_[i].share) parts_[i].path = path;
      parts_[i].share += static_cast<float>(weight);
      return;
    }
  }
  if (size_ < parts_.size()) {
    parts_[size_++] = {origin, static_cast<float>(weight), path};
    return;
  }
  // Full: the smallest part gives way to a larger one (what is lost is the smallest share).
  const auto smallest = std::min_element(parts_.begin(), parts_.end(), [](const Part& a, const Part& b) { return a.share < b.share; });
  if (smallest->share < weight) *smallest = {origin, static_cast<float>(weight), path};
}

void Blame::add(const Blame& other, double weight) {
  for (const Part& p : other.parts()) add(p.origin, weight * p.share, p.path);
}

void Blame::normalize() {
  std::sort(parts_.begin(), parts_.begin() + size_, [](const Part& a, const Part& b) { return a.share > b.share; });
  size_ = static_cast<uint8_t>(std::min<size_t>(size_, kParts));
  double sum = 0;
  for (size_t i = 0; i < size_; ++i) sum += parts_[i].share;
  if (sum <= 0) {
    size_ = 0;
    return;
  }
  for (size_t i = 0; i < size_; ++i) parts_[i].share = static_cast<float>(parts_[i].share / sum);
}

// The op the gap before `start` is measured from: of those that started earlier, the one
// that ended last (the newest of a tie).
std::optional<size_t> WaitAttribution::Ledger::before(uint64_t start) const {
  const bool ordered = pushes >= disordered_until;
  std::optional<size_t> out;
  for (size_t n = 0, i = next; n < size; ++n) {
    i = (i + kLedger - 1) % kLedger;
    if (starts[i] >= start || (out && ends[i] <= ends[*out])) continue;
    out = i;
    if (ordered) break;
  }
  return out;
}

// Whether the op the gap is measured from is here: it ended `gap` before `start`, or, for a
// gap of 0, it started earlier and was still running. Newest first: it is most often the
// op pushed last.
bool WaitAttribution::Ledger::has(uint64_t start, uint64_t gap) const {
  for (size_t n = 0, i = next; n < size; ++n) {
    i = (i + kLedger - 1) % kLedger;
    if (measuredFrom(starts[i], ends[i], start, gap)) return true;
  }
  return false;
}

void WaitAttribution::Ledger::push(uint64_t start, uint64_t end, const Blame& blame, double held) {
  if (size != 0) {
    const size_t newest = (next + kLedger - 1) % kLedger;
    if (start < starts[newest] || end < ends[newest]) disordered_until = pushes + kLedger;  // until the newest now is evicted
  }
  ++pushes;
  starts[next] = start;
  ends[next] = end;
  blames[next] = blame;
  held_ns[next] = held;
  next = (next + 1) % kLedger;
  size = std::min(size + 1, kLedger);
}

WaitAttribution::Ledger& WaitAttribution::ledgerOf(int32_t process) {
  if (ledgers_.size() <= static_cast<size_t>(process)) ledgers_.resize(static_cast<size_t>(process) + 1);
  return ledgers_[static_cast<size_t>(process)];
}

void WaitAttribution::prefetchLedger(std::span<const SyncMember> members, size_t i) const {
  if (i >= members.size() || members[i].process < 0 || static_cast<size_t>(members[i].process) >= ledgers_.size()) return;
  const Ledger& l = ledgers_[static_cast<size_t>(members[i].process)];
  for (const uint64_t* line : {&l.starts[0], &l.starts[kLedger / 2], &l.ends[0], &l.ends[kLedger / 2]}) __builtin_prefetch(line);
  __builtin_prefetch(&l.next);
}

std::optional<WaitAttribution::Wait> WaitAttribution::blocking(Pending& p) {
  for (; p.ready_members < p.members.size(); ++p.ready_members) {
    prefetchLedger(p.members, p.ready_members + kLedgersAhead);
    const SyncMember& m = p.members[p.ready_members];
    if (m.process < 0) continue;
    if (m.gap_ns != MemberView::kNoGap && !ledgerOf(m.process).has(m.gpu_start_ns, m.gap_ns)) return Wait{m.process, m.gpu_start_ns, m.gap_ns};
    if (m.role == 0) continue;
    if (const std::optional<uint64_t> plays = role_gaps_.soloPlays(m.role, m.process); plays && *plays <= kRoleWait)
      return Wait{m.process, 0, 0, m.role};
  }
  return std::nullopt;
}

WaitAttribution::Handle WaitAttribution::store(Pending& p) {
  uint32_t slot = 0;
  if (free_slots_.empty()) {
    slot = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  } else {
    slot = free_slots_.back();
    free_slots_.pop_back();
  }
  Slot& s = slots_[slot];
  std::swap(s.pending, p);  // p takes the slot's old member storage, to fill next
  s.live = true;
  pending_members_ += s.pending.members.size();
  return (static_cast<uint64_t>(s.generation) << 32) | slot;
}

WaitAttribution::Pending* WaitAttribution::find(Handle handle) {
  const size_t slot = static_cast<uint32_t>(handle);
  if (slot >= slots_.size()) return nullptr;
  Slot& s = slots_[slot];
  return s.live && s.generation == static_cast<uint32_t>(handle >> 32) ? &s.pending : nullptr;
}

void WaitAttribution::release(Handle handle) {
  Slot& s = slots_[static_cast<uint32_t>(handle)];
  pending_members_ -= s.pending.members.size();
  member_storage_.give(s.pending.members);
  s.live = false;
  ++s.generation;
  free_slots_.push_back(static_cast<uint32_t>(handle));
}

void WaitAttribution::ProcessWaiters::add(const Waiter& waiter) {
  const Filed filed{added_++, waiter};
  if (by_key_.empty() && few_.size() < kFew) {
    few_.push_back(filed);
    bound(waiter);
    return;
  }
  for (const Filed& f : few_) by_key_.emplace(keyOf(f.waiter), f);
  few_.clear();
  unbound();
  by_key_.emplace(keyOf(waiter), filed);
}

void WaitAttribution::ProcessWaiters::wake(uint64_t op_start, uint64_t op_end, std::vector<Handle>& woken) {
  const auto measured = [&](const Filed& f) { return measuredFrom(op_start, op_end, f.waiter.start, f.waiter.gap); };
  if (by_key_.empty()) {
    // Woken: key == op_end (a gap) or op_start < key <= op_end (gap 0); none when every key
    // is past op_end, or short of it and no later than op_start.
    if (op_end < few_lowest_ || (few_highest_ < op_end && few_highest_ <= op_start)) return;
    unbound();
    std::erase_if(few_, [&](const Filed& f) {
      if (!measured(f)) {
        bound(f.waiter);
        return false;
      }
      woken.push_back(f.waiter.handle);
      return true;
    });
    return;
  }
  woken_.clear();
  for (auto it = by_key_.lower_bound(op_start); it != by_key_.end() && it->first <= op_end;) {
    if (!measured(it->second)) {
      ++it;
      continue;
    }
    woken_.push_back(it->second);
    it = by_key_.erase(it);
  }
  std::sort(woken_.begin(), woken_.end(), [](const Filed& a, const Filed& b) { return a.order < b.order; });
  for (const Filed& f : woken_) woken.push_back(f.waiter.handle);
}

void WaitAttribution::wait(Handle handle, const Wait& w) {
  if (w.role != 0) {
    role_waiters_[w.role].push_back(handle);
  } else {
    if (waiters_.size() <= static_cast<size_t>(w.process)) waiters_.resize(static_cast<size_t>(w.process) + 1);
    ProcessWaiters& waiters = waiters_[static_cast<size_t>(w.process)];
    waiters.add({w.start, w.gap, handle});
    waiters.compactWhenDoubled([&](Handle h) { return find(h) == nullptr; });
  }
  // One woken by each op of its process that is not the one it waits for (a gap of 0 waits
  // for any op still running) waits there again: its patience counts from the first time.
  Pending& p = *find(handle);
  if (p.blocked_on == w.process) return;
  p.blocked_on = w.process;
  const size_t process = static_cast<size_t>(w.process);
  if (blocked_.size() <= process) blocked_.resize(process + 1);
  if (blocked_limits_.size() <= process) blocked_limits_.resize(process + 1, kMinCompaction);
  blocked_[process].emplace_back(handle, arrived_[process]);
  compactWhenDoubled(blocked_[process], blocked_limits_[process], [&](const auto& b) { return find(b.first) == nullptr; });
  refreshPatience(process);
}

void WaitAttribution::refreshPatience(size_t process) {
  if (patience_due_.size() <= process) patience_due_.resize(process + 1, kNeverDue);
  const auto& blocked = blocked_[process];
  patience_due_[process] = blocked.empty() ? kNeverDue : blocked.front().second + kPatience;
}

// Drops what has proceeded from a queue of waiting instances once the queue has doubled
// since it was last compacted: its front may wait for the whole run (its predecessor never
// joined), and what queued behind it would otherwise grow with the run.
template <class Queue, class Settled>
void WaitAttribution::compactWhenDoubled(Queue& queue, size_t& limit, Settled settled) {
  if (queue.size() < limit) return;
  std::erase_if(queue, settled);
  limit = std::max(kMinCompaction, 2 * queue.size());
}

template <class Gone>
void WaitAttribution::ProcessWaiters::compactWhenDoubled(Gone gone) {
  if (by_key_.empty()) WaitAttribution::compactWhenDoubled(few_, limit_, [&](const Filed& f) { return gone(f.waiter.handle); });
  else WaitAttribution::compactWhenDoubled(by_key_, limit_, [&](const auto& filed) { return gone(filed.second.waiter.handle); });
}

size_t WaitAttribution::queued() const {
  size_t n = pending_order_.size();
  for (const auto& blocked : blocked_) n += blocked.size();
  return n;
}

// What waited for this member's op (its gap is measured from it) may go on. Only that: waking
// a gap-0 waiter for each op of its process made a run whose ops waited long quadratic in them.
void WaitAttribution::wake(const SyncMember& m) {
  if (waiters_.size() > static_cast<size_t>(m.process)) waiters_[static_cast<size_t>(m.process)].wake(m.gpu_start_ns, m.gpu_end_ns, ready_);
}

// pending_order_ keeps instances that have proceeded until they reach its front.
void WaitAttribution::dropSettledFront() {
  while (!pending_order_.empty() && find(pending_order_.front()) == nullptr) pending_order_.pop_front();
}

void WaitAttribution::add(uint32_t comm, bool synchronizing, std::span<const SyncMember> members, uint64_t total_wait_ns, uint64_t tag,
                          bool transfer, std::array<NameId, 2> paths) {
  member_storage_.take(scratch_pending_.members, members.size());
  scratch_pending_.members.assign(members.begin(), members.end());
  Pending header{comm, synchronizing, total_wait_ns, tag, {}, transfer, 0, false};
  header.paths = {paths};
  submit(std::move(header));
}

// `header`: the pending instance but for its members, which are in scratch_pending_.
void WaitAttribution::submit(Pending header) {
  Pending& p = scratch_pending_;  // stored only when it must wait
  header.members.swap(p.members);
  p = std::move(header);
  processes_.clear();  // p's members may be gone when the patience is checked
  for (const SyncMember& m : p.members) {
    if (m.process < 0) continue;
    processes_.push_back(m.process);
    if (m.role != 0) {
      role_gaps_.note(m.role, m.process, m.gpu_start_ns, m.gap_ns);
      if (!role_waiters_.empty()) {
        if (const auto it = role_waiters_.find(m.role); it != role_waiters_.end()) {
          ready_.insert(ready_.end(), it->second.begin(), it->second.end());
          role_waiters_.erase(it);
        }
      }
    }
    if (arrived_.size() <= static_cast<size_t>(m.process)) arrived_.resize(static_cast<size_t>(m.process) + 1, 0);
    ++arrived_[static_cast<size_t>(m.process)];
  }
  if (const std::optional<Wait> w = blocking(p)) {
    const Handle handle = store(p);
    pending_order_.push_back(handle);
    compactWhenDoubled(pending_order_, pending_order_limit_, [&](Handle h) { return find(h) == nullptr; });
    wait(handle, *w);
  } else {
    process(p);
  }
  drain();
  for (const int32_t process : processes_) expirePatience(process);
  while (pending_members_ > max_pending_members_) force(pending_order_.front());
  dropSettledFront();
}

// A pending op blocked on a process that has since had kPatience more ops arrive waits for
// a predecessor that is not coming (an op outside the --from/--to window, one never joined).
// Checked for every member of every op, so it reads two flat counters; what has proceeded
// stays queued until its patience runs out or the queue compacts (what queued behind it
// came later: it cannot run out first).
void WaitAttribution::expirePatience(int32_t process) {
  const size_t p = static_cast<size_t>(process);
  if (patience_due_.size() <= p) return;
  while (patience_due_[p] <= arrived_[p]) {
    const Handle handle = blocked_[p].front().first;
    blocked_[p].pop_front();
    refreshPatience(p);
    force(handle);
  }
}

void WaitAttribution::force(Handle handle) {
  Pending* p = find(handle);
  if (p == nullptr) {
    if (!pending_order_.empty() && pending_order_.front() == handle) pending_order_.pop_front();
    return;
  }
  process(*p);
  release(handle);
  drain();
}

void WaitAttribution::drain() {
  while (!ready_.empty()) {
    const Handle handle = ready_.back();
    ready_.pop_back();
    Pending* p = find(handle);
    if (p == nullptr) continue;
    if (const std::optional<Wait> w = blocking(*p)) {
      wait(handle, *w);
      continue;
    }
    process(*p);
    release(handle);
  }
}

void WaitAttribution::flush() {
  forceInProgramOrder([](const Pending&) { return true; });
  waiters_.clear();
  role_waiters_.clear();
  blocked_.clear();
  patience_due_.clear();
}

void WaitAttribution::releaseWalk() {
  std::vector<Ledger>().swap(ledgers_);
  std::vector<Slot>().swap(slots_);
  std::vector<uint32_t>().swap(free_slots_);
  std::deque<Handle>().swap(pending_order_);
  std::vector<ProcessWaiters>().swap(waiters_);
  std::vector<SyncMember>().swap(scratch_pending_.members);
  member_storage_.clear();
}

void WaitAttribution::flushBefore(uint64_t tag) {
  forceInProgramOrder([tag](const Pending& p) { return p.tag < tag; });
}

// What waits for ops that are not coming (a shard's first ops, those of ops never joined)
// proceeds each rank's in its own order: an op goes when it is the earliest waiting op of
// every process in it. What is left then (none, with consistent clocks) goes in arrival order.
void WaitAttribution::forceInProgramOrder(const std::function<bool(const Pending&)>& due) {
  ProgramOrder order(*this, due);
  while (order.settleFronts()) {
    while (const std::optional<Handle> handle = order.nextReady()) {
      const std::vector<size_t> processes = order.processesOf(*handle);
      force(*handle);
      for (const size_t process : processes) order.settle(process);
    }
  }
  std::vector<Handle> rest;
  for (Handle handle : pending_order_)
    if (const Pending* p = find(handle); p != nullptr && due(*p)) rest.push_back(handle);
  for (Handle handle : rest) force(handle);
  dropSettledFront();
}

// Each process's waiting ops by GPU start, and each op's count of the processes whose
// earliest it is: forcing an op moves only its own processes' fronts, so the end of a long
// run (thousands of ops waiting, of a thousand members each) is not rescanned per op.
WaitAttribution::ProgramOrder::ProgramOrder(WaitAttribution& owner, const std::function<bool(const Pending&)>& due)
    : owner_(owner), waiting_(owner.arrived_.size()), next_(waiting_.size(), 0), counted_(waiting_.size(), 0),
      fronts_(owner.slots_.size(), 0), processes_(owner.slots_.size(), 0) {
  // A process twice in an op (a send to itself) is there twice: its front stops at the first.
  for (uint32_t slot = 0; slot < owner.slots_.size(); ++slot) {
    const Slot& s = owner.slots_[slot];
    if (!s.live || !due(s.pending)) continue;
    const Handle handle = (static_cast<uint64_t>(s.generation) << 32) | slot;
    processes_[slot] = static_cast<uint32_t>(processesOf(handle).size());
    for (const SyncMember& m : s.pending.members)
      if (m.process >= 0) waiting_[static_cast<size_t>(m.process)].push_back({m.gpu_start_ns, handle});
  }
  for (auto& ops : waiting_) std::sort(ops.begin(), ops.end());
}

std::vector<size_t> WaitAttribution::ProgramOrder::processesOf(Handle handle) const {
  std::vector<size_t> out;
  for (const SyncMember& m : owner_.find(handle)->members)
    if (m.process >= 0) out.push_back(static_cast<size_t>(m.process));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// Moves the process's front past what has proceeded; a new front counts once for its op.
void WaitAttribution::ProgramOrder::settle(size_t process) {
  const auto& ops = waiting_[process];
  size_t& next = next_[process];
  while (next < ops.size() && owner_.find(ops[next].second) == nullptr) ++next;
  if (next == ops.size() || counted_[process] == next + 1) return;
  counted_[process] = next + 1;
  const Handle handle = ops[next].second;
  const size_t slot = static_cast<uint32_t>(handle);
  if (++fronts_[slot] == processes_[slot]) ready_.push_back(handle);
}

// What forcing let proceed through the wake path moved other fronts: every one is read again.
bool WaitAttribution::ProgramOrder::settleFronts() {
  for (size_t process = 0; process < waiting_.size(); ++process) settle(process);
  return !ready_.empty();
}

std::optional<WaitAttribution::Handle> WaitAttribution::ProgramOrder::nextReady() {
  while (!ready_.empty()) {
    const Handle handle = ready_.back();
    ready_.pop_back();
    if (owner_.find(handle) != nullptr) return handle;
  }
  return std::nullopt;
}

// The waiters' median gap before the op. With one last arriver whose peers' gap is the
// median of every other member's (addCollective's), that is it; else it is measured.
double WaitAttribution::waiterGap(const Pending& p) {
  const SyncMember* last = nullptr;
  for (const SyncMember& m : p.members) {
    if (m.last_share == 0) continue;
    if (last != nullptr) {
      last = nullptr;
      break;
    }
    last = &m;
  }
  if (p.peers_are_the_others && last != nullptr && last->gap_ns != MemberView::kNoGap && last->peer_gap_ns >= 0) return last->peer_gap_ns;
  gaps_.clear();
  for (const SyncMember& m : p.members)
    if (m.last_share == 0 && m.gap_ns != MemberView::kNoGap) gaps_.push_back(static_cast<double>(m.gap_ns));
  return gaps_.empty() ? -1 : percentile(gaps_, 0.5);
}

// The median of values (0 for none), without reordering them when they are all one value:
// the members that left one op together carry the same.
double WaitAttribution::middleOf(std::vector<double>& values) {
  if (values.empty()) return 0;
  const auto [low, high] = std::minmax_element(values.begin(), values.end());
  return *low == *high ? *low : percentile(values, 0.5);
}

void WaitAttribution::process(Pending& p) {
  const size_t n = p.members.size();
  // A role's typical gap is read where it is used: by a last arriver's split, and by the
  // replays of the process.
  for (SyncMember& m : p.members) {
    const bool replayed = replays_.maskOf(m.process) != 0;
    if (m.role != 0 && (m.last_share > 0 || replayed)) m.peer_gap_ns = role_gaps_.typicalNs(m.role, m.process);
    if (m.sibling_role != 0 && replayed) m.sibling_gap_ns = role_gaps_.typicalNs(m.sibling_role, m.process, /*own_past=*/false);
  }
  created_.assign(n, 0);
  charges_.clear();
  carries_.resize(std::max(carries_.size(), n));  // read only where set: a waiter leaves with the last arrivers' blame
  held_.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const SyncMember& m = p.members[i];
    const bool carried = !p.synchronizing || m.last_share > 0;
    if (carried) carries_[i] = Blame{};
    prefetchLedger(p.members, i + kLedgersAhead);
    if (m.process < 0) continue;
    const Ledger& ledger = ledgerOf(m.process);
    const std::optional<size_t> e = ledger.before(m.gpu_start_ns);
    if (!e) continue;
    held_[i] = ledger.held_ns[*e];
    if (carried) carries_[i] = ledger.blames[*e];
  }
  Blame exit;
  double exit_held = 0;
  if (p.synchronizing) {
    waiter_held_.clear();
    for (size_t i = 0; i < n; ++i)
      if (p.members[i].last_share == 0) waiter_held_.push_back(held_[i]);
    const double waiter_gap = waiterGap(p);
    const double waiter_held = middleOf(waiter_held_);
    // How long the others waited for the last arrivers, on average: what their lateness is.
    const double lateness = std::max(kTieLatenessNs, waiter_held_.empty() ? 0.0 : static_cast<double>(p.total_wait_ns) / static_cast<double>(waiter_held_.size()));
    const double wait = static_cast<double>(p.total_wait_ns);
    for (size_t i = 0; i < n; ++i) {
      const SyncMember& m = p.members[i];
      if (m.last_share <= 0) continue;
      const DelayOrigin origin{p.comm, m.comm_rank, m.process};
      const LatenessSplit split = splitLateness(m, lateness, waiter_gap, held_[i] - waiter_held);
      created_[i] = m.last_share * split.created;
      const double created_ns = split.created * lateness;
      exit.add(origin, m.last_share * created_ns, p.pathOf(i));
      exit.add(carries_[i], m.last_share * held_[i]);
      exit_held += m.last_share * (held_[i] + created_ns);
      if (wait > 0 && split.created > 0) charges_.push_back({origin, wait * m.last_share * split.created, true, p.pathOf(i)});
      for (const Blame::Part& part : carries_[i].parts())
        if (wait > 0 && split.inherited > 0)
          charges_.push_back({part.origin, wait * m.last_share * split.inherited * part.share, false, part.path});
    }
    exit.normalize();
  }
  for (size_t i = 0; i < n; ++i) {
    const SyncMember& m = p.members[i];
    if (m.process < 0) continue;
    if (p.synchronizing) ledgerOf(m.process).push(m.gpu_start_ns, m.gpu_end_ns, exit, exit_held);
    else ledgerOf(m.process).push(m.gpu_start_ns, m.gpu_end_ns, carries_[i], held_[i]);
  }
  replays_.sync(p.synchronizing, p.members);
  if (p.synchronizing) {
    // A transfer's later side's role peers (only sends and receives have roles).
    const size_t peered = p.transfer ? n : 0;
    role_peers_.resize(std::max(role_peers_.size(), peered));
    for (size_t i = 0; i < peered; ++i) {
      const SyncMember& m = p.members[i];
      if (m.role != 0 && created_[i] > 0) role_gaps_.peersOf(m.role, m.process, role_peers_[i]);
      else role_peers_[i].clear();
    }
    on_attributed_(Attributed{p.comm, p.members, created_, charges_, p.total_wait_ns, p.tag, p.transfer, {role_peers_.data(), peered}, p.paths});
  }
  for (const SyncMember& m : p.members)
    if (m.process >= 0) wake(m);
}

namespace {

// The synchronization's members as the attribution reads them, each with the median gap of
// the others (who did the same work before the same op). The others' nearest-rank median is
// the k-th smallest of all (k = n/2 - 1, from 0) for a member above it and the next one up
// for any other, so two order statistics serve every member.
void syncMembersOf(const InstanceArrivals& arrivals, std::span<const MemberView> views, std::vector<SyncMember>& out,
                   std::vector<uint64_t>& gaps) {
  out.clear();
  gaps.clear();
  for (const MemberArrival& a : arrivals.members) {
    const MemberView& v = views[static_cast<size_t>(a.comm_rank)];
    out.push_back({a.comm_rank, a.process, v.gpu_start_ns, v.gpu_end_ns, v.gpu_gap_ns, v.cpu_start_ns, static_cast<double>(a.lateness_ns),
                   static_cast<double>(a.wait_ns), a.last_share, -1});
    if (v.gpu_gap_ns != MemberView::kNoGap) gaps.push_back(v.gpu_gap_ns);
  }
  if (gaps.size() < 2) return;
  const auto kth = gaps.begin() + static_cast<std::ptrdiff_t>(gaps.size() / 2 - 1);
  std::nth_element(gaps.begin(), kth, gaps.end());
  const uint64_t at_k = *kth, above_k = *std::min_element(kth + 1, gaps.end());
  for (SyncMember& m : out)
    if (m.gap_ns != MemberView::kNoGap) m.peer_gap_ns = static_cast<double>(m.gap_ns > at_k ? at_k : above_k);
}

// A member that only passes its blame on: what an op that does not synchronize is.
SyncMember passing(const MemberView& v) {
  return {v.comm_rank, v.process, v.gpu_start_ns, v.gpu_end_ns, v.gpu_gap_ns, v.cpu_start_ns, 0, 0, 0, -1, 0, 0, -1};
}

}  // namespace

bool WaitAttribution::withinOneHost(std::span<const SyncMember> members) const {
  if (run_ == nullptr || members.empty()) return false;
  const auto hostOf = [&](int32_t process) -> const std::string* {
    return process >= 0 && static_cast<size_t>(process) < run_->processes.size() ? &run_->processes[static_cast<size_t>(process)].host : nullptr;
  };
  const std::string* host = hostOf(members.front().process);
  if (host == nullptr || host->empty()) return false;
  return std::all_of(members.begin() + 1, members.end(), [&](const SyncMember& m) {
    const std::string* h = hostOf(m.process);
    return h != nullptr && *h == *host;
  });
}

void WaitAttribution::noteSiblingSeats(const CollInstance& c, std::vector<SyncMember>& members) {
  const int size = static_cast<int>(c.n_members);
  if (sibling_seats_.size() <= c.comm) sibling_seats_.resize(c.comm + 1);
  SiblingSeats& seats = sibling_seats_[c.comm];
  if (seats.bytes != c.bytes || seats.func != c.func || seats.roles.size() != c.n_members) seats = {c.bytes, c.func, std::vector<RoleGaps::Id>(c.n_members, 0)};
  for (SyncMember& m : members) {
    if (m.process < 0 || m.comm_rank < 0 || m.comm_rank >= size) continue;
    RoleGaps::Id& role = seats.roles[static_cast<size_t>(m.comm_rank)];
    if (role == 0) role = role_gaps_.idOf(RoleGaps::keyOf({false, c.bytes, size, m.comm_rank, -2 - static_cast<int32_t>(c.func)}));
    m.sibling_role = role;
    role_gaps_.noteLatest(role, m.process, m.gpu_start_ns, m.gap_ns);
  }
}

void WaitAttribution::addCollective(const CollInstance& c, std::span<const MemberView> members, uint64_t tag) {
  const nccl::FuncInfo* func = NamePool::ncclFunc(c.func);
  if (arrivalsOf(func != nullptr && func->synchronizing, members, arrivals_)) {
    member_storage_.take(scratch_pending_.members, arrivals_.members.size());
    std::vector<SyncMember>& sync = scratch_pending_.members;
    syncMembersOf(arrivals_, members, sync, member_gaps_);
    if (withinOneHost(sync)) noteSiblingSeats(c, sync);
    Pending header{c.comm, true, arrivals_.total_wait_ns, tag, {}, false, 0, /*peers_are_the_others=*/true};
    header.paths = {{c.path, c.path}};
    submit(std::move(header));
    return;
  }
  members_.clear();
  for (const MemberView& m : members)
    if (m.process >= 0 && m.gpuDuration() != 0) members_.push_back(passing(m));
  if (!members_.empty()) add(c.comm, false, members_, 0, tag);
}

void WaitAttribution::addTransfer(const P2pTransfer& t, uint64_t tag) {
  members_.clear();
  const uint64_t send = t.send.gpuDuration(), recv = t.recv.gpuDuration();
  if (NamePool::isCallPiece(t.func) || send == 0 || recv == 0 || t.send.process < 0 || t.recv.process < 0) {
    for (const MemberView* v : {&t.send, &t.recv})
      if (v->process >= 0 && v->gpuDuration() != 0) members_.push_back(passing(*v));
    if (!members_.empty()) add(t.comm, false, members_, 0, tag);
    return;
  }
  const uint64_t shortest = std::min(send, recv), longest = std::max(send, recv);
  const bool tied = longest - shortest < kTieNs;
  for (const auto& [v, d, is_send] : {std::tuple{&t.send, send, true}, std::tuple{&t.recv, recv, false}}) {
    SyncMember m = passing(*v);
    m.arrival_ns = static_cast<double>(longest - d);
    m.wait_ns = static_cast<double>(d - shortest);
    m.last_share = tied ? 0.5 : (d == shortest ? 1.0 : 0.0);
    const MemberView& peer = is_send ? t.recv : t.send;
    m.role = role_gaps_.idOf(RoleGaps::keyOf({is_send, t.bytes, t.comm_size, v->comm_rank, peer.comm_rank}));
    members_.push_back(m);
  }
  add(t.comm, true, members_, longest - shortest, tag, /*transfer=*/true, {t.send_path, t.recv_path});
}

void WaitAttribution::copyStateFrom(const WaitAttribution& other) {
  OnAttributed own = std::move(on_attributed_);
  *this = other;
  on_attributed_ = std::move(own);
}

void WaitAttribution::addCandidate(std::vector<int32_t> processes) {
  std::sort(processes.begin(), processes.end());
  if (replays_.candidates.size() >= kMaxCandidates || isCandidate(processes)) return;
  for (const int32_t p : processes)
    if (p >= 0) replays_.of(p).mask |= static_cast<uint8_t>(1u << replays_.candidates.size());
  replays_.candidates.push_back({std::move(processes), 0});
}

bool WaitAttribution::isCandidate(std::span<const int32_t> processes) const {
  return std::any_of(replays_.candidates.begin(), replays_.candidates.end(),
                     [&](const Replays::Candidate& c) { return std::ranges::equal(c.processes, processes); });
}

WaitAttribution::Replays::Process& WaitAttribution::Replays::of(int32_t process) {
  if (processes.size() <= static_cast<size_t>(process)) processes.resize(static_cast<size_t>(process) + 1);
  return processes[static_cast<size_t>(process)];
}

uint8_t WaitAttribution::Replays::maskOf(int32_t process) const {
  return process >= 0 && static_cast<size_t>(process) < processes.size() ? processes[static_cast<size_t>(process)].mask : 0;
}

// Each member arrives earlier by what it was ahead before and, for a candidate's members, by
// the delay they created; a synchronization's members all leave at the last virtual arrival,
// so each is then ahead by the last actual arrival less that.
void WaitAttribution::Replays::sync(bool synchronizing, std::span<const SyncMember> members) {
  const size_t n = candidates.size();
  if (n == 0) return;
  std::array<double, kMaxCandidates> last_virtual;
  last_virtual.fill(-INFINITY);
  double last = -INFINITY;
  for (const SyncMember& m : members) {
    if (m.process < 0) continue;
    Process& p = of(m.process);
    const double own = p.mask != 0 ? createdDelayNs(m) : 0.0, group = p.mask != 0 ? groupCreatedDelayNs(m) : 0.0;
    last = std::max(last, m.arrival_ns);
    for (size_t r = 0; r < n; ++r) {
      const double fixed = (p.mask >> r & 1u) == 0 ? 0.0 : (candidates[r].processes.size() > 1 ? group : own);
      const double ahead = p.advance[r] + fixed;
      last_virtual[r] = std::max(last_virtual[r], m.arrival_ns - ahead);
      if (!synchronizing) p.advance[r] = ahead;
      if (p.first[r] == 0) p.first[r] = m.gpu_start_ns;
      p.last[r] = std::max(p.last[r], m.gpu_end_ns);
    }
  }
  if (synchronizing && last > -INFINITY) {
    for (const SyncMember& m : members) {
      if (m.process < 0) continue;
      Process& p = processes[static_cast<size_t>(m.process)];
      for (size_t r = 0; r < n; ++r) p.advance[r] = std::max(0.0, last - last_virtual[r]);
    }
  }
  for (Candidate& c : candidates) ++c.syncs;
}

std::vector<ImpactEstimate> WaitAttribution::impacts() const {
  std::vector<ImpactEstimate> out;
  for (size_t r = 0; r < replays_.candidates.size(); ++r) {
    std::vector<double> shares;
    for (const Replays::Process& p : replays_.processes)
      if (p.first[r] != 0 && p.last[r] > p.first[r]) shares.push_back(p.advance[r] / static_cast<double>(p.last[r] - p.first[r]));
    const Replays::Candidate& c = replays_.candidates[r];
    out.push_back({c.processes, shares.empty() ? 0.0 : median(std::move(shares)), c.syncs});
  }
  return out;
}

uint64_t RoleGaps::keyOf(const Role& r) {
  uint64_t key = r.bytes * 0x9E3779B97F4A7C15ull;
  for (const uint64_t part : {static_cast<uint64_t>(r.comm_size), static_cast<uint64_t>(static_cast<uint32_t>(r.comm_rank)),
                              static_cast<uint64_t>(static_cast<uint32_t>(r.peer)), static_cast<uint64_t>(r.send)})
    key = (key ^ part) * 0x100000001B3ull;
  return key;
}

RoleGaps::Id RoleGaps::idOf(uint64_t key) {
  const auto [it, added] = ids_.try_emplace(key, static_cast<Id>(roles_.size() + 1));
  if (added) roles_.push_back({key, {}, {}});
  return it->second;
}

void RoleGaps::note(Id id, int32_t process, uint64_t gpu_start_ns, uint64_t gap_ns) {
  if (gap_ns == MemberView::kNoGap) return;
  roleOf(id).sums[process].add(static_cast<double>(gap_ns) / 1e3);
  noteLatest(id, process, gpu_start_ns, gap_ns);
}

void RoleGaps::peersOf(Id id, int32_t process, std::vector<RolePeer>& out) const {
  out.clear();
  for (const Player& p : roleOf(id).latest.players) {
    if (p.process == process) continue;
    for (size_t g = 0; g < p.size; ++g) out.push_back({p.process, p.starts[g], p.gaps[g]});
  }
}

void RoleGaps::noteLatest(Id id, int32_t process, uint64_t gpu_start_ns, uint64_t gap_ns) {
  if (gap_ns == MemberView::kNoGap) return;
  Latest& role = roleOf(id).latest;
  auto player = std::find_if(role.players.begin(), role.players.end(), [&](const Player& p) { return p.process == process; });
  if (player == role.players.end()) {
    if (role.players.size() < kPlayers) player = role.players.emplace(role.players.end());
    else player = role.players.begin() + static_cast<std::ptrdiff_t>(role.replaced++ % kPlayers);
    *player = Player{process, {}, {}};
  }
  ++player->plays;
  player->gaps[player->next] = gap_ns;
  player->starts[player->next] = gpu_start_ns;
  player->next = static_cast<uint8_t>((player->next + 1) % kKept);
  player->size = static_cast<uint8_t>(std::min<size_t>(player->size + 1u, kKept));
}

// The latest players hold every process that played it up to kPlayers, and kPlayers of them
// past that: another is among them whenever there is one. Without another, the process is
// the only player there is (none is replaced below kPlayers), and its count all it played.
std::optional<uint64_t> RoleGaps::soloPlays(Id id, int32_t process) const {
  uint64_t plays = 0;
  for (const Player& p : roleOf(id).latest.players) {
    if (p.process != process) return std::nullopt;
    plays = p.plays;
  }
  return plays;
}

double RoleGaps::typicalNs(Id id, int32_t process, bool own_past) {
  const Latest& role = roleOf(id).latest;
  for (const bool others : {true, false}) {
    if (!others && !own_past) break;
    scratch_.clear();
    for (const Player& p : role.players) {
      if ((p.process != process) == others)
        for (size_t g = 0; g < p.size; ++g) scratch_.push_back(static_cast<double>(p.gaps[g]));
    }
    if (!scratch_.empty()) return percentile(scratch_, 0.5);
  }
  return -1;
}

RoleGaps::ProcessSums RoleGaps::sums() const {
  ProcessSums out;
  for (const Entry& role : roles_)
    if (!role.sums.empty()) out[role.key] = role.sums;
  return out;
}

std::unordered_map<int32_t, RoleGaps::Sums> RoleGaps::excessByProcess(const ProcessSums& sums) {
  std::unordered_map<int32_t, Sums> out;
  std::vector<double> means;
  for (const auto& [role, processes] : sums) {
    for (const auto& [process, s] : processes) {
      means.clear();
      for (const auto& [other, o] : processes)
        if (other != process && o.n > 0) means.push_back(o.sum_us / o.n);
      if (means.empty() || s.n == 0) continue;
      const double typical = median(means);
      // The process's gaps less the typical one, summed as its own sums give them.
      Sums& e = out[process];
      e.n += s.n;
      e.sum_us += s.sum_us - s.n * typical;
      e.sq_us += s.sq_us - 2 * typical * s.sum_us + s.n * typical * typical;
    }
  }
  return out;
}

void RoleGaps::merge(ProcessSums& into, const ProcessSums& other) {
  for (const auto& [role, processes] : other)
    for (const auto& [process, s] : processes) into[role][process].merge(s);
}

}  // namespace commtrace::report
