// The parallel report's exchange over MPI (report_command.h, StateExchange): the states go
// to process 0 point to point in pieces of at most 1 GiB (MPI counts are ints; a shard's
// state at 16,384 ranks is 334 MB), waited for without spinning. Only commtrace-mpi links MPI: libcommtrace.so and
// the commtrace tool never do.
#pragma once

#include <string>
#include <vector>

#include "tools/report_command.h"

namespace commtrace::tools {

class MpiExchange : public StateExchange {
 public:
  MpiExchange();  // after MPI_Init
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  bool gather(std::string mine, std::vector<std::string>& all) override;

 private:
  int rank_ = 0, size_ = 1;
};

}  // namespace commtrace::tools
