#include "tools/mpi/mpi_exchange.h"

#include <mpi.h>

#include <algorithm>
#include <cstdint>

namespace commtrace::tools {

namespace {

constexpr uint64_t kPieceBytes = uint64_t{1} << 30;
constexpr int kStateTag = 1;

}  // namespace

MpiExchange::MpiExchange() {
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

bool MpiExchange::gather(const std::string& mine, std::vector<std::string>& all) {
  uint64_t bytes = mine.size();
  std::vector<uint64_t> sizes(rank_ == 0 ? static_cast<size_t>(size_) : 0);
  if (MPI_Gather(&bytes, 1, MPI_UINT64_T, sizes.data(), 1, MPI_UINT64_T, 0, MPI_COMM_WORLD) != MPI_SUCCESS) return false;
  if (rank_ != 0) {
    for (uint64_t at = 0; at < bytes; at += kPieceBytes) {
      const int piece = static_cast<int>(std::min(kPieceBytes, bytes - at));
      if (MPI_Send(mine.data() + at, piece, MPI_BYTE, 0, kStateTag, MPI_COMM_WORLD) != MPI_SUCCESS) return false;
    }
    return true;
  }
  all.assign(static_cast<size_t>(size_), std::string());
  all[0] = mine;
  for (int r = 1; r < size_; ++r) {
    std::string& state = all[static_cast<size_t>(r)];
    state.resize(sizes[static_cast<size_t>(r)]);
    for (uint64_t at = 0; at < state.size(); at += kPieceBytes) {
      const int piece = static_cast<int>(std::min<uint64_t>(kPieceBytes, state.size() - at));
      if (MPI_Recv(state.data() + at, piece, MPI_BYTE, r, kStateTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE) != MPI_SUCCESS) return false;
    }
  }
  return true;
}

}  // namespace commtrace::tools
