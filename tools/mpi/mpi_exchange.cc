#include "tools/mpi/mpi_exchange.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <thread>

namespace commtrace::tools {

namespace {

constexpr uint64_t kPieceBytes = uint64_t{1} << 30;
constexpr int kSizeTag = 1, kStateTag = 2;

// Waits for a transfer without spinning: MPI's blocking calls poll at full speed, and a
// process that has sent its state (or process 0, waiting for the others) would take a core
// from the processes still reading their shards.
bool finished(MPI_Request& request) {
  for (int done = 0;;) {
    if (MPI_Test(&request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return false;
    if (done != 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

bool send(const void* data, int count, MPI_Datatype type, int tag) {
  MPI_Request request;
  return MPI_Isend(data, count, type, 0, tag, MPI_COMM_WORLD, &request) == MPI_SUCCESS && finished(request);
}

bool receive(void* data, int count, MPI_Datatype type, int from, int tag) {
  MPI_Request request;
  return MPI_Irecv(data, count, type, from, tag, MPI_COMM_WORLD, &request) == MPI_SUCCESS && finished(request);
}

}  // namespace

MpiExchange::MpiExchange() {
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

bool MpiExchange::gather(std::string mine, std::vector<std::string>& all) {
  if (rank_ != 0) {
    const uint64_t bytes = mine.size();
    if (!send(&bytes, 1, MPI_UINT64_T, kSizeTag)) return false;
    for (uint64_t at = 0; at < bytes; at += kPieceBytes)
      if (!send(mine.data() + at, static_cast<int>(std::min(kPieceBytes, bytes - at)), MPI_BYTE, kStateTag)) return false;
    return true;
  }
  all.assign(static_cast<size_t>(size_), std::string());
  all[0] = std::move(mine);
  for (int r = 1; r < size_; ++r) {
    uint64_t bytes = 0;
    if (!receive(&bytes, 1, MPI_UINT64_T, r, kSizeTag)) return false;
    std::string& state = all[static_cast<size_t>(r)];
    state.resize(bytes);
    for (uint64_t at = 0; at < bytes; at += kPieceBytes)
      if (!receive(state.data() + at, static_cast<int>(std::min(kPieceBytes, bytes - at)), MPI_BYTE, r, kStateTag)) return false;
  }
  return true;
}

}  // namespace commtrace::tools
