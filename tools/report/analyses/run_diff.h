// `commtrace diff RUN_A RUN_B`: what changed between two runs' reports, as a user compares a
// run before and after tuning. Communicators are matched by name (ids are random per run;
// unnamed ones by their size, "8 ranks"), ops by (communicator, func, size bucket), whatever
// algorithm or protocol NCCL chose each time: a change of those is part of what is shown.
#pragma once

#include <string>
#include <vector>

#include "tools/report/report.h"

namespace commtrace::report {

// One (communicator, func, size bucket) in either run; count 0 on the side it is absent from.
struct OpDiffSide {
  uint64_t count = 0;
  double time_us_total = 0;  // transfer times summed
  double time_us_mean = 0;   // over the timed instances
  double busbw_gbs = 0;      // busBw p50 of its rows, weighted by their instances
  std::string algo_proto;    // of its row with the most instances: "RING/SIMPLE"
};

struct OpDiffRow {
  std::string comm;  // the name matched on
  std::string func;
  std::string bucket;
  OpDiffSide a, b;
  std::string change;  // "new", "gone", "" (in both)
};

// One NVTX path (call_paths) in either run: its ops' communication time and the part of it
// exposed, summed over ranks. kUnknown where a run did not measure it (its ranks lacked
// compute records) or does not have the path.
struct PathDiffRow {
  static constexpr double kUnknown = -1;
  std::string path;
  double comm_us_a = 0, comm_us_b = 0;
  double exposed_us_a = kUnknown, exposed_us_b = kUnknown;
  std::string change;  // "new", "gone", "" (in both)
};

struct RankDiffRow {
  int rank = -1;
  double step_us_a = 0, step_us_b = 0;        // mean step time (0: no steps found)
  double exposed_us_a = 0, exposed_us_b = 0;  // exposed communication per step (0: not available)
  bool straggler_a = false, straggler_b = false;
};

// A culprit of A that B no longer has: what A's report estimated fixing it would save per
// step, against what B measures (A's step less B's). How far the estimates can be trusted,
// when B is A with that one culprit fixed.
struct GainCheck {
  std::string subject;  // "rank 6", "host node1"
  std::string finding;  // A's sentence
  double estimated_us = 0;
  double measured_us = 0;
};

// A culprit or loss finding, named by what it is about: the same kind and subject in both runs
// is the same culprit, whatever its figures.
struct DiffFinding {
  std::string kind;     // "straggler", "slow_link", ... (FindingRow::kind)
  std::string subject;  // "rank 6"
  std::string finding;  // the sentence, from the run it is in (B's when in both)
};

struct RunDiff {
  double step_us_a = 0, step_us_b = 0;  // the median rank's mean step time
  double comm_us_a = 0, comm_us_b = 0;  // every op's transfer times summed
  std::vector<OpDiffRow> ops;           // most changed total time first (changes within noise in key order), new and gone ops included
  std::vector<RankDiffRow> ranks;       // ranks whose step, exposure or straggler verdict changed most first
  std::vector<PathDiffRow> paths;       // most changed exposed time first (communication time where either side's is not known)
  std::vector<DiffFinding> findings_new;   // culprit findings only in B (by kind and subject)
  std::vector<DiffFinding> findings_gone;  // only in A
  std::vector<DiffFinding> findings_kept;  // in both: what the change did not fix
  std::vector<GainCheck> gains;            // A's culprits gone in B that carried an estimate
  // Why the two may not be before and after of one job: different rank counts, no op in common.
  std::vector<std::string> warnings;
};

RunDiff diffReports(const Report& a, const Report& b);

}  // namespace commtrace::report
