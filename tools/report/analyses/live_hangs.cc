#include "tools/report/analyses/live_hangs.h"

#include <algorithm>
#include <set>

namespace commtrace::report {
namespace {

bool isCollective(const HungOp& op) { return op.peer < 0; }

// A completion `done` on a member shows it past `stuck`: a later collective on the
// communicator (they complete in order), or a later transfer to the same peer the same way.
bool supersedes(const HungOp& done, const HungOp& stuck) {
  if (isCollective(done) != isCollective(stuck)) return false;
  if (isCollective(done)) return done.op_index >= stuck.op_index;
  return done.func == stuck.func && done.peer == stuck.peer && done.op_index >= stuck.op_index;
}

double secondsBetween(uint64_t from_ns, uint64_t to_ns) { return to_ns > from_ns ? static_cast<double>(to_ns - from_ns) / 1e9 : 0; }

}  // namespace

LiveHangs::LiveHangs(const RunModel& run, Options options, OnAlert on_alert)
    : run_(run), options_(options), on_alert_(std::move(on_alert)), send_(run.names.find("Send")), recv_(run.names.find("Recv")) {}

// A process's ops come in runs on one communicator: the last one looked up is remembered.
LiveHangs::MemberState* LiveHangs::memberOf(int32_t process, uint64_t comm_id) {
  for (const auto& [id, member] : processes_[static_cast<size_t>(process)].seats)
    if (id == comm_id) return member;
  return nullptr;
}

void LiveHangs::noteDone(int32_t process, uint64_t comm_id, const HungOp& op, uint64_t start_utc_ns) {
  MemberState* m = memberOf(process, comm_id);
  if (m == nullptr) return;
  if (!m->done || start_utc_ns >= m->done->start_utc_ns) m->done = Seen{op, start_utc_ns};
  if (m->stuck && supersedes(op, m->stuck->op)) m->stuck.reset();
}

void LiveHangs::observe(const RecordBatch& batch) {
  if (batch.process < 0) return;
  if (processes_.size() <= static_cast<size_t>(batch.process)) processes_.resize(static_cast<size_t>(batch.process) + 1);
  ProcessState& process = processes_[static_cast<size_t>(batch.process)];
  process.heartbeat_utc_ns = std::max({process.heartbeat_utc_ns, batch.heartbeat_utc_ns, batch.position_ns});
  for (const CommInfoRow& c : batch.comm_infos) {
    CommState& comm = comms_[c.comm_id];
    comm.name = c.name;
    comm.size = std::max(comm.size, c.size);
    MemberState* member = &comm.members[c.rank];
    member->process = batch.process;
    const auto seat = std::find_if(process.seats.begin(), process.seats.end(), [&](const auto& s) { return s.first == c.comm_id; });
    if (seat == process.seats.end()) process.seats.emplace_back(c.comm_id, member);
    else seat->second = member;
  }
  const int64_t utc_minus_cpu = run_.processes[static_cast<size_t>(batch.process)].utc_minus_cpu_ns;
  for (const CollRow& r : batch.colls) {
    noteDone(batch.process, r.comm_id, HungOp{r.func, r.seq, r.op_index, -1}, cpuToUtc(r.view.cpu_start_ns, utc_minus_cpu));
  }
  for (const P2pRow& r : batch.p2ps) {
    noteDone(batch.process, r.comm_id, HungOp{r.is_send ? send_ : recv_, 0, r.op_index, r.peer},
             cpuToUtc(r.view.cpu_start_ns, utc_minus_cpu));
  }
  for (const InFlightRow& f : batch.in_flight) {
    MemberState* m = memberOf(batch.process, f.comm_id);
    if (m == nullptr) continue;
    const HungOp op{f.func, f.seq, f.op_index, f.peer};
    // A report made just before the op completed can follow its completion in the same chunk.
    const bool stale = f.in_flight == 0 || (m->done && supersedes(m->done->op, op));
    if (stale) {
      m->stuck.reset();
    } else {
      m->stuck = Seen{op, f.start_utc_ns};
      comms_[f.comm_id].maybe_stuck = true;
    }
  }
  // A process that ended waits for nothing (one that records on reopens its file).
  if (batch.heartbeat_utc_ns != 0 || !batch.colls.empty() || !batch.p2ps.empty()) process.closed = batch.closed;
}

// Every communicator's longest wait is judged, then raised most waiting members first: a
// wait whose other members are all stuck in ops elsewhere is a knock-on of a hang there (the
// data-parallel pairs of a tensor-parallel group one rank of which stopped), and a wait on
// members another alert names already is the same hang: one HANG for the whole wait.
void LiveHangs::advance(uint64_t now_utc_ns) {
  std::vector<Candidate> candidates;
  for (auto& [comm_id, comm] : comms_)
    if (std::optional<Candidate> c = judge(comm_id, comm, now_utc_ns)) candidates.push_back(*c);
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    return a.waiting != b.waiting ? a.waiting > b.waiting : a.comm_id < b.comm_id;
  });
  std::set<int32_t> named;  // processes the raised alerts name as where the wait starts
  for (const auto& [comm_id, comm] : comms_)
    if (comm.alert) named.insert(comm.roots.begin(), comm.roots.end());
  for (const Candidate& c : candidates) {
    CommState& comm = comms_.at(c.comm_id);
    const Roots roots = rootsOf(c.comm_id, comm, c.op);
    if (roots.knock_on) continue;
    if (!roots.processes.empty() &&
        std::all_of(roots.processes.begin(), roots.processes.end(), [&](int32_t p) { return named.count(p) != 0; }))
      continue;
    HangAlert alert = describe(c.comm_id, comm, c.op, now_utc_ns);
    if (contradictsItself(alert)) continue;  // looked at again at the next advance
    comm.roots = roots.processes;
    named.insert(roots.processes.begin(), roots.processes.end());
    comm.alert = std::move(alert);
    on_alert_(*comm.alert);
  }
}

// The members of the communicator not waiting in op, as where the wait starts: those not
// stuck in an op on another communicator (stopped, gone, never seen). None, with some not
// waiting: they are all stuck elsewhere, and this wait is a knock-on.
LiveHangs::Roots LiveHangs::rootsOf(uint64_t comm_id, const CommState& comm, const HungOp& op) const {
  Roots out;
  bool others = false;
  for (const auto& [rank, m] : comm.members) {
    if (isStuck(m) && m.stuck->op == op) continue;
    others = true;
    if (m.process >= 0 && stuckElsewhere(m.process, comm_id)) continue;
    out.processes.push_back(m.process);
  }
  out.knock_on = others && out.processes.empty() && static_cast<int>(comm.members.size()) >= comm.size;
  return out;
}

bool LiveHangs::stuckElsewhere(int32_t process, uint64_t comm_id) const {
  for (const auto& [id, member] : processes_[static_cast<size_t>(process)].seats)
    if (id != comm_id && isStuck(*member)) return true;
  return false;
}

std::vector<HangAlert> LiveHangs::hanging() const {
  std::vector<HangAlert> out;
  for (const auto& [comm_id, comm] : comms_) {
    if (comm.alert) out.push_back(*comm.alert);
  }
  std::sort(out.begin(), out.end(), [](const HangAlert& a, const HangAlert& b) { return a.comm_id < b.comm_id; });
  return out;
}

// The op most members wait in (the earliest started among equals), once one of them has
// waited hang_after; recovered once nobody waits in it.
std::optional<LiveHangs::Candidate> LiveHangs::judge(uint64_t comm_id, CommState& comm, uint64_t now_utc_ns) {
  struct Wait {
    HungOp op;
    int members = 0;
    uint64_t first_start_utc_ns = UINT64_MAX;
  };
  if (!comm.maybe_stuck && !comm.alert) return std::nullopt;
  std::vector<Wait> waits;  // few: the members stuck right now
  for (const auto& [rank, m] : comm.members) {
    if (!isStuck(m)) continue;
    auto w = std::find_if(waits.begin(), waits.end(), [&](const Wait& x) { return x.op == m.stuck->op; });
    if (w == waits.end()) w = waits.insert(waits.end(), Wait{m.stuck->op});
    ++w->members;
    w->first_start_utc_ns = std::min(w->first_start_utc_ns, m.stuck->start_utc_ns);
  }
  if (comm.alert) {
    if (std::any_of(waits.begin(), waits.end(), [&](const Wait& w) { return w.op == comm.alert->op; })) {
      comm.alert->waited_s = secondsBetween(comm.alert->since_utc_ns, now_utc_ns);
      return std::nullopt;
    }
    HangAlert recovered = *comm.alert;
    recovered.kind = HangAlert::Kind::kRecovered;
    recovered.waited_s = secondsBetween(recovered.since_utc_ns, now_utc_ns);
    // Waiters whose processes ended still in the op (the job was terminated during the hang)
    // did not go on: the HANG stays the last word, no RECOVERED.
    const bool ended_waiting = std::any_of(comm.members.begin(), comm.members.end(), [&](const auto& member) {
      const MemberState& m = member.second;
      return m.stuck && m.stuck->op == comm.alert->op && m.process >= 0 && processes_[static_cast<size_t>(m.process)].closed;
    });
    comm.alert.reset();
    comm.roots.clear();
    if (!ended_waiting) on_alert_(recovered);
  }
  comm.maybe_stuck = !waits.empty();
  if (waits.empty()) return std::nullopt;
  const Wait& most = *std::max_element(waits.begin(), waits.end(), [](const Wait& a, const Wait& b) {
    return a.members != b.members ? a.members < b.members : a.first_start_utc_ns > b.first_start_utc_ns;
  });
  if (now_utc_ns < most.first_start_utc_ns + options_.hang_after_ns) return std::nullopt;
  return Candidate{comm_id, most.op, most.members};
}

// A member said to be missing from the op that has already completed it, or a later one:
// the waiters' reports are older than its progress (the machine, or the collector, stalled
// and their reports came in late), not a hang. After a 12 s stall of the whole machine a
// HANG named members last seen 412 ops ahead of the waiters.
bool LiveHangs::contradictsItself(const HangAlert& a) {
  return std::any_of(a.others.begin(), a.others.end(), [&](const HangAlert::Member& m) { return !m.stuck && m.last && supersedes(*m.last, a.op); });
}

bool LiveHangs::isStuck(const MemberState& m) const {
  return m.stuck && m.process >= 0 && !processes_[static_cast<size_t>(m.process)].closed;
}

HangAlert LiveHangs::describe(uint64_t comm_id, const CommState& comm, const HungOp& op, uint64_t now_utc_ns) const {
  HangAlert a{.comm_id = comm_id, .comm_name = comm.name, .comm_size = comm.size, .op = op, .since_utc_ns = UINT64_MAX};
  const auto memberAlert = [&](int rank, const MemberState* m) {
    HangAlert::Member out{.process = m != nullptr ? m->process : -1, .comm_rank = rank};
    if (m == nullptr || m->process < 0) return out;
    out.stuck = isStuck(*m);
    if (out.stuck) out.last = m->stuck->op;
    else if (m->done) out.last = m->done->op;
    const uint64_t heartbeat = processes_[static_cast<size_t>(m->process)].heartbeat_utc_ns;
    if (heartbeat != 0 && now_utc_ns > heartbeat + options_.silent_after_ns) out.silent_s = secondsBetween(heartbeat, now_utc_ns);
    return out;
  };
  const int size = std::max(comm.size, comm.members.empty() ? 0 : comm.members.rbegin()->first + 1);
  for (int rank = 0; rank < size; ++rank) {
    const auto it = comm.members.find(rank);
    const MemberState* m = it != comm.members.end() ? &it->second : nullptr;
    if (m != nullptr && isStuck(*m) && m->stuck->op == op) {
      a.waiting.push_back(memberAlert(rank, m));
      a.since_utc_ns = std::min(a.since_utc_ns, m->stuck->start_utc_ns);
    } else if (isCollective(op) || rank == op.peer) {
      a.others.push_back(memberAlert(rank, m));
    }
  }
  a.waited_s = secondsBetween(a.since_utc_ns, now_utc_ns);
  return a;
}

}  // namespace commtrace::report
