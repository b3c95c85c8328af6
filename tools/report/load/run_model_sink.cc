#include "tools/report/load/run_model_sink.h"

#include <algorithm>
#include <tuple>

namespace commtrace::report {

void RunModelSink::collective(const CollInstance& instance, std::span<const MemberView> members) {
  if (!keep_ops_) return;
  CollInstance& c = run_.collectives.emplace_back(instance);
  c.first_member = static_cast<uint32_t>(run_.members.size());
  run_.members.insert(run_.members.end(), members.begin(), members.end());
}

void RunModelSink::transfer(const P2pTransfer& transfer) {
  if (keep_ops_) run_.transfers.push_back(transfer);
}

void RunModelSink::finish() {
  sortOps();
}

void RunModelSink::sortOps() {
  const NamePool& names = run_.names;
  std::sort(run_.collectives.begin(), run_.collectives.end(), [&](const CollInstance& a, const CollInstance& b) {
    if (std::tie(a.comm, a.op_index, a.seq) != std::tie(b.comm, b.op_index, b.seq)) {
      return std::tie(a.comm, a.op_index, a.seq) < std::tie(b.comm, b.op_index, b.seq);
    }
    return names[a.func] < names[b.func];  // ids depend on thread timing, names do not
  });
  std::sort(run_.transfers.begin(), run_.transfers.end(), [](const P2pTransfer& a, const P2pTransfer& b) {
    return std::tie(a.comm, a.op_index, a.send.comm_rank, a.recv.comm_rank) <
           std::tie(b.comm, b.op_index, b.send.comm_rank, b.recv.comm_rank);
  });
}

}  // namespace commtrace::report
