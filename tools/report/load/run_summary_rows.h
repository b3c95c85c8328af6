// The head of every report format, as the loader's summary of a run gives it
// (load/run_summary.h): the run in a few numbers and one row per communicator.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace commtrace::report {

struct RunSummary {
  std::string dir;
  std::vector<std::string> jobs;  // the job ids the files name, sorted (several only with --job all)
  int ranks = 0;      // distinct global ranks with a file
  int processes = 0;  // files read (restarts make several per rank)
  int hosts = 0;
  int communicators = 0;
  uint64_t ops = 0;  // collective instances + point-to-point transfers
  uint64_t collective_instances = 0;
  uint64_t p2p_transfers = 0;
  uint64_t dropped_records = 0;
  uint64_t untracked_events = 0;
  int files = 0;          // trace files found
  int damaged_files = 0;  // read with frames skipped or a torn tail (not counting an open file's, the chunk being written)
  // Files not closed by their writer: still being written (a live run), and left open,
  // quiet for ten flush periods or more (the process was killed, crashed, hangs or idles),
  // with their ranks and the latest time one of them was written.
  int files_being_written = 0;
  int files_left_open = 0;
  int files_left_open_exit_unseen = 0;  // of them, written by a library that could not see an _exit
  int files_cut_short = 0;              // of them, modified well after their writer stopped (ProcessInfo::modifiedAfterItsWriter)
  std::vector<int> ranks_left_open;
  uint64_t left_open_last_written_utc_ns = 0;
  uint64_t read_utc_ns = 0;  // when the report read the files
  std::vector<std::string> problems;  // one line per unreadable/damaged/foreign file
  std::vector<int> missing_ranks;     // global ranks with no file
  // When the ops ran (CLOCK_REALTIME ns, 0: no op): the first op's start, the last op's
  // end, and the latest time every file with ops reaches (the earliest of the files' last
  // ops): of a run still being written, or one whose processes stopped apart, what is
  // covered by every rank.
  uint64_t first_op_utc_ns = 0;
  uint64_t last_op_utc_ns = 0;
  uint64_t all_files_reach_utc_ns = 0;
  // `report --from/--to`: whether a window was asked for, its ends (0 and UINT64_MAX where
  // not given) and how many collective instances and transfers fell outside it.
  bool windowed = false;
  uint64_t window_from_utc_ns = 0;
  uint64_t window_to_utc_ns = 0;
  uint64_t ops_outside_window = 0;
  // Ends given as steps (-1: given as a time, or not given): window_step_rank's steps, its
  // NVTX step ranges (the first named window_step_range) or, when it has none, as its op
  // sequence repeats, window_step_period ops each.
  int64_t window_from_step = -1, window_to_step = -1;
  int window_step_rank = -1;
  uint64_t window_step_period = 0;
  std::string window_step_range;
  // Merged from this many shards' states (commtrace merge, commtrace-mpi): the root-cause
  // walk's figures are then estimates (SCHEMA.md); 1 for a run read whole.
  int shards = 1;
};

struct CommunicatorRow {
  uint64_t id = 0;
  std::string name;
  int size = 0;
  std::vector<int> ranks;  // global, comm-rank order; -1 unknown
  int hosts = 0;
  uint64_t instances = 0;
};

}  // namespace commtrace::report
