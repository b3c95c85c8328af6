#include "tools/report/analyses/p2p_calls.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "core/nccl_vocab.h"

namespace commtrace::report {
namespace {

using nccl::Func;

// A call NCCL runs as per-peer pieces (AlltoAll, Gather, Scatter), by its name; nullptr else.
const nccl::FuncInfo* callFuncOf(std::string_view func) {
  const nccl::FuncInfo* f = nccl::findFunc(func);
  return f != nullptr && f->shape == nccl::FuncShape::kPieces ? f : nullptr;
}

// One rank's side of one piece.
struct Piece {
  const MemberView* side = nullptr;
  bool is_send = false;
  int peer = 0;  // comm rank
  uint64_t bytes = 0;
  uint32_t transfer = 0;  // index into RunModel::transfers
  bool names_call = false;  // this side assigns the transfer to its call (the send, else the receive)
};

// (comm, func, comm rank) -> that rank's pieces.
using PieceKey = std::tuple<uint32_t, NameId, int>;

std::map<PieceKey, std::vector<Piece>> piecesByRank(const RunModel& run) {
  std::map<PieceKey, std::vector<Piece>> out;
  for (uint32_t i = 0; i < run.transfers.size(); ++i) {
    const P2pTransfer& t = run.transfers[i];
    if (!NamePool::isCallPiece(t.func) || t.send.comm_rank == t.recv.comm_rank) continue;
    const bool sent = t.send.process >= 0;
    if (sent) out[{t.comm, t.func, t.send.comm_rank}].push_back({&t.send, true, t.recv.comm_rank, t.bytes, i, true});
    if (t.recv.process >= 0)
      out[{t.comm, t.func, t.recv.comm_rank}].push_back({&t.recv, false, t.send.comm_rank, t.bytes, i, !sent});
  }
  return out;
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

 private:
  bool complete() const {
    switch (call_) {
      case Func::kAlltoAll: return sends_ == others_ && recvs_ == others_;
      case Func::kGather: return sends_ == 1 || recvs_ == others_;
      case Func::kScatter: return recvs_ == 1 || sends_ == others_;
      default: return true;  // only those three are calls of pieces
    }
  }
  static size_t slot(const Piece& p) { return 2 * static_cast<size_t>(p.peer) + (p.is_send ? 1 : 0); }

  Func call_;
  uint32_t others_;
  std::vector<uint64_t> stamp_;
  uint64_t number_ = 1;  // 0 marks a slot never seen
  uint32_t sends_ = 0, recvs_ = 0;
};

void addPiece(MemberView& m, const MemberView& side) {
  if (m.process < 0) {  // the first piece: pieces arrive in issue order
    m.process = side.process;
    m.cpu_start_ns = side.cpu_start_ns;
    m.stream = side.stream;
  }
  m.cpu_end_ns = std::max(m.cpu_end_ns, side.cpu_end_ns);
  if (side.gpuDuration() == 0) return;
  m.gpu_start_ns = m.gpu_start_ns == 0 ? side.gpu_start_ns : std::min(m.gpu_start_ns, side.gpu_start_ns);
  m.gpu_end_ns = std::max(m.gpu_end_ns, side.gpu_end_ns);
}

// (comm, func, index) -> call
using CallKey = std::tuple<uint32_t, NameId, uint64_t>;

P2pCall& callAt(const RunModel& run, std::map<CallKey, P2pCall>& calls, const CallKey& key) {
  const auto [it, inserted] = calls.try_emplace(key);
  P2pCall& call = it->second;
  if (inserted) {
    std::tie(call.comm, call.func, call.index) = key;
    call.members.resize(static_cast<size_t>(run.comms[call.comm].size));
    for (size_t r = 0; r < call.members.size(); ++r) call.members[r].comm_rank = static_cast<int32_t>(r);
  }
  return call;
}

}  // namespace

std::vector<P2pCall> p2pCalls(const RunModel& run) {
  std::map<CallKey, P2pCall> calls;
  for (auto& [key, pieces] : piecesByRank(run)) {
    const auto& [comm, func, rank] = key;
    std::stable_sort(pieces.begin(), pieces.end(),
                     [](const Piece& a, const Piece& b) { return a.side->cpu_start_ns < b.side->cpu_start_ns; });
    RankPart part(callFuncOf(run.name(func))->func, run.comms[comm].size);
    for (const Piece& p : pieces) {
      if (part.beginsNext(p)) part.next();
      part.add(p);
      P2pCall& call = callAt(run, calls, {comm, func, part.index()});
      call.bytes = std::max(call.bytes, p.bytes);
      if (p.names_call) call.pieces.push_back(p.transfer);
      addPiece(call.members[static_cast<size_t>(rank)], *p.side);
    }
  }
  std::vector<P2pCall> out;
  out.reserve(calls.size());
  for (auto& [key, call] : calls) out.push_back(std::move(call));
  return out;
}

}  // namespace commtrace::report
