#include "tools/report/analyses/edge_model.h"

#include "core/nccl_vocab.h"

namespace commtrace::report {

const char kEdgeModel[] =
    "Collectives decomposed as nccl-tests models them: RING, rank i sends to rank i+1 in comm-rank order "
    "(NCCL's real ring order is not recorded, so comm-rank order is assumed): AllReduce 2(n-1)/n x S, "
    "AllGather and ReduceScatter (n-1)/n x S, Broadcast a chain from the root, Reduce a chain ending at the root; "
    "TREE AllReduce: one binary tree in comm-rank heap order, the payload reduced up and broadcast down each edge "
    "(NCCL's double tree spreads the same bytes over two mirrored trees); NVLS, COLLNET and PAT are modelled as RING, "
    "which keeps each rank's byte total of the nccl-tests model but not the switch or tree it really crossed";

namespace {

using nccl::Func;

void ring(Func func, int n, int root, uint64_t bytes, std::vector<ModelEdge>& out) {
  const uint64_t un = static_cast<uint64_t>(n);
  auto next = [n](int i) { return (i + 1) % n; };
  switch (func) {
    case Func::kAllReduce:
      for (int i = 0; i < n; ++i) out.push_back({i, next(i), 2 * (un - 1) * bytes / un});
      break;
    case Func::kAllGather:
    case Func::kReduceScatter:
      for (int i = 0; i < n; ++i) out.push_back({i, next(i), (un - 1) * bytes});
      break;
    case Func::kBroadcast:
      for (int k = 0; k + 1 < n; ++k) out.push_back({(root + k) % n, (root + k + 1) % n, bytes});
      break;
    case Func::kReduce:
      for (int k = 1; k < n; ++k) out.push_back({(root + k) % n, (root + k + 1) % n, bytes});
      break;
    default: break;  // not a collective: its pieces are measured, not modelled
  }
}

void tree(int n, uint64_t bytes, std::vector<ModelEdge>& out) {
  for (int i = 1; i < n; ++i) {
    const int parent = (i - 1) / 2;
    out.push_back({i, parent, bytes});
    out.push_back({parent, i, bytes});
  }
}

}  // namespace

void modelEdges(std::string_view func, std::string_view algo, int n, int root, uint64_t bytes,
                std::vector<ModelEdge>& out) {
  const nccl::FuncInfo* f = nccl::findFunc(func);
  if (f == nullptr || n < 2 || bytes == 0) return;
  if (root < 0 || root >= n) root = 0;
  if (algo == nccl::algoName(nccl::Algo::kTree) && f->func == Func::kAllReduce) tree(n, bytes, out);
  else ring(f->func, n, root, bytes, out);
}

}  // namespace commtrace::report
