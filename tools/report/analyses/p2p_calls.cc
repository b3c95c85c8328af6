#include "tools/report/analyses/p2p_calls.h"

#include <algorithm>
#include <tuple>

#include "core/nccl_vocab.h"
#include "tools/report/load/op_stream.h"
#include "tools/report/load/reorder_buffer.h"

namespace commtrace::report {
namespace {

using nccl::Func;

// A call NCCL runs as per-peer pieces (AlltoAll, Gather, Scatter), by its func; nullptr else.
const nccl::FuncInfo* callFuncOf(NameId func) { return NamePool::isCallPiece(func) ? NamePool::ncclFunc(func) : nullptr; }

// One rank's side of one piece, held until its place in the rank's issue order is known.
struct Piece {
  MemberView side;
  bool is_send = false;
  int32_t peer = 0;  // comm rank
  uint64_t bytes = 0;
  uint64_t op_index = 0;
  bool names_call = false;  // this side assigns the transfer to its call (the send, else the receive)
};

bool laterIssued(const Piece& a, const Piece& b) {
  return std::tie(a.side.cpu_start_ns, a.op_index, a.peer, a.is_send) > std::tie(b.side.cpu_start_ns, b.op_index, b.peer, b.is_send);
}

// A rank's part of the call being assembled. Seen (direction, peer) slots are stamped with
// the part's number, so starting a part costs nothing however large the communicator.
class RankPart {
 public:
  RankPart(Func call, int n) : call_(call), others_(static_cast<uint32_t>(n - 1)), stamp_(2 * static_cast<size_t>(n), 0) {}

  // Whether piece p begins the next call rather than joining this one.
  bool beginsNext(const Piece& p) const {
    if (sends_ + recvs_ == 0) return false;
    if (complete() || stamp_[slot(p)] == number_) return true;
    return call_ != Func::kAlltoAll && (sends_ > 0) != p.is_send;
  }
  void next() {
    ++number_;
    sends_ = recvs_ = 0;
  }
  void add(const Piece& p) {
    stamp_[slot(p)] = number_;
    ++(p.is_send ? sends_ : recvs_);
  }
  uint64_t index() const { return number_ - 1; }
  bool complete() const {
    switch (call_) {
      case Func::kAlltoAll: return sends_ == others_ && recvs_ == others_;
      case Func::kGather: return sends_ == 1 || recvs_ == others_;
      case Func::kScatter: return recvs_ == 1 || sends_ == others_;
      default: return true;  // only those three are calls of pieces
    }
  }

 private:
  static size_t slot(const Piece& p) { return 2 * static_cast<size_t>(p.peer) + (p.is_send ? 1 : 0); }

  Func call_;
  uint32_t others_;
  std::vector<uint64_t> stamp_;
  uint64_t number_ = 1;  // 0 marks a slot never seen
  uint32_t sends_ = 0, recvs_ = 0;
};

void addPiece(MemberView& m, const MemberView& side) {
  if (m.process < 0) {  // the first piece: pieces are released in issue order
    m.process = side.process;
    m.cpu_start_ns = side.cpu_start_ns;
    m.stream = side.stream;
  }
  m.cpu_end_ns = std::max(m.cpu_end_ns, side.cpu_end_ns);
  if (side.gpuDuration() == 0) return;
  m.gpu_start_ns = m.gpu_start_ns == 0 ? side.gpu_start_ns : std::min(m.gpu_start_ns, side.gpu_start_ns);
  m.gpu_end_ns = std::max(m.gpu_end_ns, side.gpu_end_ns);
}

}  // namespace

struct P2pCallJoiner::Group {
  struct Rank {
    Rank(Func call, int n) : held(laterIssued), part(call, n) {}
    ReorderBuffer<Piece, bool (*)(const Piece&, const Piece&)> held;
    RankPart part;
    uint64_t newest_cpu_ns = 0;
    uint64_t done = 0;  // its parts of the calls before this one are complete
  };

  Group(uint32_t c, NameId f, Func kind, int size) : comm(c), func(f), call(kind), n(size), ranks(static_cast<size_t>(size)) {}

  // Takes one rank's side of a piece; releases what the window no longer needs to hold.
  void add(int rank, const Piece& piece, const OnCall& on_call) {
    auto& r = ranks[static_cast<size_t>(rank)];
    if (r == nullptr) r = std::make_unique<Rank>(call, n);
    r->newest_cpu_ns = std::max(r->newest_cpu_ns, piece.side.cpu_start_ns);
    r->held.push(piece);
    bool released = false;
    while (!r->held.empty() && (r->held.size() > kMaxHeldPieces || r->held.earliest().side.cpu_start_ns + kPieceHorizonNs < r->newest_cpu_ns)) {
      release(rank, r->held.popEarliest());
      released = true;
    }
    if (released) handOnComplete(on_call);
  }

  // The rest, in issue order, and every call still open.
  void finish(const OnCall& on_call) {
    for (size_t rank = 0; rank < ranks.size(); ++rank)
      while (ranks[rank] != nullptr && !ranks[rank]->held.empty()) release(static_cast<int>(rank), ranks[rank]->held.popEarliest());
    for (auto& [index, c] : open) on_call(c);
    open.clear();
  }

 private:
  void release(int rank, const Piece& p) {
    Rank& r = *ranks[static_cast<size_t>(rank)];
    if (r.part.beginsNext(p)) r.part.next();
    r.part.add(p);
    const uint64_t k = r.part.index();
    P2pCall& c = callAt(k);
    c.bytes = std::max(c.bytes, p.bytes);
    if (p.names_call) c.pieces.push_back({p.is_send ? rank : p.peer, p.is_send ? p.peer : rank, p.op_index, p.bytes});
    addPiece(c.members[static_cast<size_t>(rank)], p.side);
    r.done = r.part.complete() ? k + 1 : k;
  }

  P2pCall& callAt(uint64_t k) {
    const auto [it, inserted] = open.try_emplace(k);
    P2pCall& c = it->second;
    if (inserted) {
      c.comm = comm;
      c.func = func;
      c.index = k;
      c.members.resize(static_cast<size_t>(n));
      for (int r = 0; r < n; ++r) c.members[static_cast<size_t>(r)].comm_rank = r;
    }
    return c;
  }

  // The earliest open calls every rank with pieces has moved past.
  void handOnComplete(const OnCall& on_call) {
    while (!open.empty()) {
      const uint64_t k = open.begin()->first;
      const bool past = std::all_of(ranks.begin(), ranks.end(), [&](const std::unique_ptr<Rank>& r) { return r == nullptr || r->done > k; });
      if (!past) return;
      on_call(open.begin()->second);
      open.erase(open.begin());
    }
  }


 public:
  const uint32_t comm;
  const NameId func;
  const Func call;
  const int n;

 private:
  std::vector<std::unique_ptr<Rank>> ranks;  // per comm rank, from its first piece
  std::map<uint64_t, P2pCall> open;          // by index
};

P2pCallJoiner::P2pCallJoiner(OnCall on_call) : on_call_(std::move(on_call)) {}
P2pCallJoiner::~P2pCallJoiner() = default;

void P2pCallJoiner::transfer(const P2pTransfer& t) {
  const nccl::FuncInfo* func = callFuncOf(t.func);
  const int n = t.comm_size;
  const int src = t.send.comm_rank, dst = t.recv.comm_rank;
  if (func == nullptr || src == dst || src < 0 || dst < 0 || src >= n || dst >= n) return;
  auto& group = groups_[{t.comm, t.func}];
  if (group == nullptr) group = std::make_unique<Group>(t.comm, t.func, func->func, n);
  if (group->n != n) return;  // a damaged record: its communicator's size disagrees
  const bool sent = t.send.process >= 0;
  if (sent) group->add(src, {t.send, true, dst, t.bytes, t.op_index, true}, on_call_);
  if (t.recv.process >= 0) group->add(dst, {t.recv, false, src, t.bytes, t.op_index, !sent}, on_call_);
}

void P2pCallJoiner::finish() {
  for (auto& [key, group] : groups_) group->finish(on_call_);
  groups_.clear();
}

std::vector<P2pCall> p2pCalls(const RunModel& run) {
  std::vector<P2pCall> calls;
  P2pCallJoiner joiner([&](const P2pCall& c) { calls.push_back(c); });
  replayRun(run, joiner);
  std::sort(calls.begin(), calls.end(), [](const P2pCall& a, const P2pCall& b) {
    return std::tie(a.comm, a.func, a.index) < std::tie(b.comm, b.func, b.index);
  });
  return calls;
}

}  // namespace commtrace::report
