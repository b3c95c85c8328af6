#include "tools/report/analyses/overlap.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <thread>
#include <cctype>
#include <map>
#include <functional>
#include <span>
#include <string>
#include <tuple>

#include "tools/report/analyses/process_ops.h"
#include "tools/report/load/own_ops.h"

namespace commtrace::report {
namespace {

constexpr const char* kNoComputeReason = "no compute-kernel records: CUPTI was not attached";
constexpr const char* kUnplacedComputeReason =
    "compute kernels recorded, but not placed on the GPU clock: no NCCL kernel CUPTI reported matched an op the "
    "plugin timed";
constexpr const char* kNoCommReason = "no communication kernel with GPU times recorded";

using Window = StepWindow;

// Dense ids for (comm, func, bytes, side), so that op sequences compare as integers. Computed
// once per instance and transfer side, not once per member.
struct OpKeys {
  std::vector<uint32_t> collective;  // per RunModel::collectives
  std::vector<uint32_t> send, recv;  // per RunModel::transfers

  explicit OpKeys(const RunModel& run) {
    std::map<std::tuple<uint32_t, NameId, uint64_t, int32_t>, uint32_t> ids;
    auto id = [&](uint32_t comm, NameId func, uint64_t bytes, int32_t side) {
      return ids.try_emplace({comm, func, bytes, side}, static_cast<uint32_t>(ids.size())).first->second;
    };
    for (const CollInstance& c : run.collectives) collective.push_back(id(c.comm, c.func, c.bytes, 0));
    for (const P2pTransfer& t : run.transfers) {
      send.push_back(id(t.comm, t.func, t.bytes, ProcessOp::kSendSide));
      recv.push_back(id(t.comm, t.func, t.bytes, ProcessOp::kRecvSide));
    }
  }
  uint32_t of(const ProcessOp& op) const {
    if (op.isCollective()) return collective[op.index];
    return op.slot == ProcessOp::kSendSide ? send[op.index] : recv[op.index];
  }
};

RankOp rankOp(uint64_t cpu_start, uint64_t gpu_start, uint64_t gpu_end, uint64_t op_index, uint32_t key, OpSide side) {
  const bool has_gpu = gpu_end > gpu_start && gpu_start != 0;
  return RankOp{.issue_ns = cpu_start != 0 ? cpu_start : gpu_start,
                .gpu_start_ns = has_gpu ? gpu_start : 0,
                .gpu_end_ns = has_gpu ? gpu_end : 0,
                .op_index = op_index,
                .key = key,
                .side = static_cast<uint8_t>(side)};
}

RankOp rankOp(const RunModel& run, const ProcessOp& op, const OpKeys& keys) {
  const MemberView& m = memberOf(run, op);
  if (op.isCollective()) {
    const CollInstance& c = run.collectives[op.index];
    return rankOp(m.cpu_start_ns, m.gpu_start_ns, m.gpu_end_ns, c.op_index, keys.of(op), OpSide::kCollective);
  }
  const OpSide side = op.slot == ProcessOp::kSendSide ? OpSide::kSend : OpSide::kRecv;
  return rankOp(m.cpu_start_ns, m.gpu_start_ns, m.gpu_end_ns, run.transfers[op.index].op_index, keys.of(op), side);
}

// Sorted, disjoint intervals: the union of the input.
std::vector<GpuInterval> unionOf(std::vector<GpuInterval> v) {
  std::sort(v.begin(), v.end(), [](const GpuInterval& a, const GpuInterval& b) { return a.start_ns < b.start_ns; });
  std::vector<GpuInterval> merged;
  for (const GpuInterval& i : v) {
    if (i.end_ns <= i.start_ns) continue;
    if (!merged.empty() && i.start_ns <= merged.back().end_ns) merged.back().end_ns = std::max(merged.back().end_ns, i.end_ns);
    else merged.push_back(i);
  }
  return merged;
}

// The intervals of a sorted, disjoint list that reach into w.
std::span<const GpuInterval> within(const std::vector<GpuInterval>& v, Window w) {
  auto first = std::partition_point(v.begin(), v.end(), [&](const GpuInterval& i) { return i.end_ns <= w.start_ns; });
  auto last = std::partition_point(first, v.end(), [&](const GpuInterval& i) { return i.start_ns < w.end_ns; });
  return {first, last};
}

uint64_t clippedLength(std::span<const GpuInterval> v, Window w) {
  uint64_t total = 0;
  for (const GpuInterval& i : v) total += std::min(i.end_ns, w.end_ns) - std::max(i.start_ns, w.start_ns);
  return total;
}

// Length of (a ∩ b ∩ w) for two sorted, disjoint lists.
uint64_t intersectionLength(std::span<const GpuInterval> a, std::span<const GpuInterval> b, Window w) {
  uint64_t total = 0;
  for (size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    const uint64_t lo = std::max({a[i].start_ns, b[j].start_ns, w.start_ns});
    const uint64_t hi = std::min({a[i].end_ns, b[j].end_ns, w.end_ns});
    if (hi > lo) total += hi - lo;
    if (a[i].end_ns < b[j].end_ns) ++i;
    else ++j;
  }
  return total;
}

struct Coverage {
  uint64_t comm_ns = 0;
  uint64_t overlapped_ns = 0;
  uint64_t idle_ns = 0;  // neither communication nor compute
  uint64_t compute_only_ns = 0;
};

Coverage coverage(const std::vector<GpuInterval>& comm, const std::vector<GpuInterval>& compute, Window w) {
  const auto c = within(comm, w);
  const auto k = within(compute, w);
  Coverage cov;
  cov.comm_ns = clippedLength(c, w);
  cov.overlapped_ns = intersectionLength(c, k, w);
  const uint64_t busy = cov.comm_ns + clippedLength(k, w) - cov.overlapped_ns;
  cov.idle_ns = w.end_ns - w.start_ns - busy;
  cov.compute_only_ns = busy - cov.comm_ns;
  return cov;
}

// Step names usually carry the step number ("step 12", "iter_12"): digits are folded so that
// the occurrences of one range repeat under one key.
std::string foldDigits(std::string_view name) {
  std::string key;
  for (char ch : name) {
    const bool digit = std::isdigit(static_cast<unsigned char>(ch)) != 0;
    if (!digit) key += ch;
    else if (key.empty() || key.back() != '#') key += '#';
  }
  return key;
}

const std::regex kProfilerStep("ProfilerStep#[0-9]+");

// The most frequent folded name at the shallowest depth where one repeats; "" when none does.
std::pair<uint16_t, std::string> repeatingRange(const ProcessTimeline& timeline, const NamePool& names) {
  std::map<std::pair<uint16_t, std::string>, size_t> occurrences;  // (depth, folded name)
  for (const PhaseSpan& ph : timeline.phases) ++occurrences[{ph.depth, foldDigits(names[ph.name])}];
  std::pair<uint16_t, std::string> best;
  size_t best_count = 1;
  for (const auto& [key, count] : occurrences) {
    if (best_count > 1 && key.first > best.first) break;  // ordered by depth: a shallower repeating range wins
    if (count > best_count) best = key, best_count = count;
  }
  return best;
}

// Steps from NVTX (StepRule), mapped from the CPU clock to the GPU clock.
std::vector<Window> nvtxSteps(const ProcessInfo& process, const ProcessTimeline& timeline, const NamePool& names,
                              const StepRule& rule) {
  if (!process.gpu_from_cpu.valid || timeline.phases.empty()) return {};
  std::function<bool(const PhaseSpan&)> isStep;
  const bool profiler_steps = std::any_of(timeline.phases.begin(), timeline.phases.end(), [&](const PhaseSpan& ph) {
    return std::regex_match(names[ph.name].begin(), names[ph.name].end(), kProfilerStep);
  });
  if (rule.set()) {
    isStep = [&](const PhaseSpan& ph) { return rule.matches(names[ph.name]); };
  } else if (profiler_steps) {
    isStep = [&](const PhaseSpan& ph) { return std::regex_match(names[ph.name].begin(), names[ph.name].end(), kProfilerStep); };
  } else {
    const auto [depth, folded] = repeatingRange(timeline, names);
    if (folded.empty()) return {};
    isStep = [&, depth = depth, folded = folded](const PhaseSpan& ph) { return ph.depth == depth && foldDigits(names[ph.name]) == folded; };
  }
  std::vector<Window> steps;
  auto toGpu = [&](uint64_t cpu_ns) { return static_cast<uint64_t>(std::max(0.0, process.gpu_from_cpu.apply(static_cast<double>(cpu_ns)))); };
  for (const PhaseSpan& ph : timeline.phases) {
    if (!isStep(ph)) continue;
    const Window w{toGpu(ph.cpu_start_ns), toGpu(ph.cpu_end_ns)};
    if (w.end_ns > w.start_ns) steps.push_back(w);
  }
  return steps;
}

// Knuth–Morris–Pratt failure function: pi[i] = length of the longest proper border of s[0..i].
std::vector<size_t> prefixFunction(const std::vector<uint32_t>& s) {
  std::vector<size_t> pi(s.size(), 0);
  for (size_t i = 1; i < s.size(); ++i) {
    size_t k = pi[i - 1];
    while (k > 0 && s[i] != s[k]) k = pi[k - 1];
    pi[i] = s[i] == s[k] ? k + 1 : k;
  }
  return pi;
}

// Where steps begin in an op sequence (indices), from its smallest repeating period: the
// whole sequence repeating (the last step may be cut short), else its longest repeating
// tail of at least half the sequence (warm-up ops before it belong to no step). At least two
// repetitions; nothing when the sequence does not repeat.
std::vector<size_t> inferredStepStarts(const std::vector<uint32_t>& keys) {
  const size_t n = keys.size();
  // The prefixes of the reversed sequence are its suffixes; a period survives reversal.
  const std::vector<size_t> pi = prefixFunction(std::vector<uint32_t>(keys.rbegin(), keys.rend()));
  for (size_t len = n; len >= 2 && 2 * len >= n; --len) {
    const size_t period = len - pi[len - 1];
    if (len < 2 * period) continue;
    const size_t first = len == n ? 0 : n - len / period * period;
    std::vector<size_t> starts;
    for (size_t s = first; s < n; s += period) starts.push_back(s);
    return starts;
  }
  return {};
}

// Step windows from the repeating op pattern: a step runs from its first op's GPU start to
// the next step's, the last one to the end of its last op.
std::vector<Window> inferredSteps(const std::vector<RankOp>& ops) {
  std::vector<uint32_t> keys;
  keys.reserve(ops.size());
  for (const RankOp& op : ops) keys.push_back(op.key);
  const std::vector<size_t> starts = inferredStepStarts(keys);
  std::vector<Window> steps;
  for (size_t s = 0; s < starts.size(); ++s) {
    const size_t end = s + 1 < starts.size() ? starts[s + 1] : ops.size();
    Window w{UINT64_MAX, 0};
    for (size_t i = starts[s]; i < end; ++i) {
      if (ops[i].gpu_end_ns == 0) continue;
      w.start_ns = std::min(w.start_ns, ops[i].gpu_start_ns);
      w.end_ns = std::max(w.end_ns, ops[i].gpu_end_ns);
    }
    if (w.end_ns != 0) steps.push_back(w);  // else no op of this step has GPU times
  }
  // A step ends where the next begins (a kernel still running then counts in the next step).
  for (size_t s = 0; s + 1 < steps.size(); ++s) steps[s].end_ns = std::max(steps[s].start_ns, steps[s + 1].start_ns);
  return steps;
}

double us(uint64_t ns) { return static_cast<double>(ns) / 1e3; }

// OverlapRow or StepOverlap. Without compute records only the communication time is known.
template <class Row>
void fillFromCoverage(const Coverage& cov, bool available, Row& row) {
  row.comm_us = us(cov.comm_ns);
  if (!available) return;
  row.overlapped_us = us(cov.overlapped_ns);
  row.exposed_us = us(cov.comm_ns - cov.overlapped_ns);
  row.idle_us = us(cov.idle_ns);
  row.compute_only_us = us(cov.compute_only_ns);
}

const ProcessTimeline& timelineOf(const RunModel& run, size_t p) {
  static const ProcessTimeline kNoTimeline;
  return p < run.timelines.size() ? run.timelines[p] : kNoTimeline;
}

// At most `max_points` entries: consecutive steps summed in stretches of equal length.
std::vector<StepOverlap> stretchesOf(const std::vector<StepOverlap>& steps, size_t max_points) {
  if (steps.size() <= max_points) return steps;
  const size_t per = (steps.size() + max_points - 1) / max_points;
  std::vector<StepOverlap> out;
  for (size_t first = 0; first < steps.size(); first += per) {
    StepOverlap sum = steps[first];
    for (size_t s = first + 1; s < std::min(steps.size(), first + per); ++s) {
      sum.last_step = steps[s].last_step;
      sum.comm_us += steps[s].comm_us;
      sum.overlapped_us += steps[s].overlapped_us;
      sum.exposed_us += steps[s].exposed_us;
      sum.idle_us += steps[s].idle_us;
      sum.compute_only_us += steps[s].compute_only_us;
    }
    out.push_back(sum);
  }
  return out;
}

// A process's steps: its repeating top-level NVTX range, else its op sequence's period.
std::vector<Window> stepsOf(const RunModel& run, size_t p, const std::vector<RankOp>& ops, const StepRule& rule,
                            std::string& source) {
  std::vector<Window> steps = nvtxSteps(run.processes[p], timelineOf(run, p), run.names, rule);
  source = "nvtx";
  if (steps.empty()) {
    steps = inferredSteps(ops);
    source = steps.empty() ? "none" : "inferred";
  }
  return steps;
}

StepTimeline mostExposedStep(const OverlapRow& row, const std::vector<Window>& steps, const std::vector<GpuInterval>& comm,
                             const std::vector<GpuInterval>& compute, uint64_t origin_ns) {
  const auto worst = std::max_element(row.steps.begin(), row.steps.end(),
                                      [](const StepOverlap& a, const StepOverlap& b) { return a.exposed_us < b.exposed_us; });
  const Window w = steps[static_cast<size_t>(worst - row.steps.begin())];
  const auto rel = [&](uint64_t t) { return static_cast<double>(static_cast<int64_t>(t - origin_ns)) / 1e3; };
  StepTimeline out{.step = worst->step, .start_us = rel(w.start_ns), .end_us = rel(w.end_ns), .comm = {}, .compute = {}};
  for (const auto& [from, to] : {std::pair{&comm, &out.comm}, std::pair{&compute, &out.compute}})
    for (const GpuInterval& i : within(*from, w)) to->emplace_back(rel(std::max(i.start_ns, w.start_ns)), rel(std::min(i.end_ns, w.end_ns)));
  return out;
}

OverlapRow overlapOfProcess(const RunModel& run, size_t p, const std::vector<RankOp>& ops, const StepRule& rule) {
  const ProcessTimeline& timeline = timelineOf(run, p);
  OverlapRow row;
  row.rank = run.processes[p].rank;
  row.step_source = "none";
  std::vector<GpuInterval> comm_kernels;
  for (const RankOp& op : ops)
    if (op.gpu_end_ns != 0) comm_kernels.push_back({op.gpu_start_ns, op.gpu_end_ns});
  const std::vector<GpuInterval> comm = unionOf(std::move(comm_kernels));
  if (comm.empty()) {
    row.reason = kNoCommReason;
    return row;
  }
  row.available = timeline.has_kernel_records && (timeline.unmapped_kernels == 0 || !timeline.compute.empty());
  if (!timeline.has_kernel_records) row.reason = kNoComputeReason;
  else if (!row.available) row.reason = kUnplacedComputeReason;
  const ProcessInfo::CuptiMatch& match = run.processes[p].cupti_match;
  row.clock_kernels = match.nccl_kernels;
  row.clock_matched = match.matched;
  row.clock_residual_us = match.residual_rms_ns / 1e3;
  const std::vector<GpuInterval> compute = unionOf(timeline.compute);

  const Window span{comm.front().start_ns, comm.back().end_ns};
  fillFromCoverage(coverage(comm, compute, span), row.available, row);
  if (row.available && row.comm_us > 0) row.overlap_pct = 100.0 * row.overlapped_us / row.comm_us;

  const std::vector<Window> steps = stepsOf(run, p, ops, rule, row.step_source);
  for (size_t s = 0; s < steps.size(); ++s) {
    StepOverlap step;
    step.step = step.last_step = static_cast<int>(s);
    step.start_us = static_cast<double>(static_cast<int64_t>(steps[s].start_ns - span.start_ns)) / 1e3;  // may be < 0 (NVTX)
    fillFromCoverage(coverage(comm, compute, steps[s]), row.available, step);
    row.steps.push_back(step);
  }
  row.step_count = static_cast<int>(steps.size());
  if (steps.size() >= 2) row.mean_step_us = (row.steps.back().start_us - row.steps.front().start_us) / static_cast<double>(steps.size() - 1);
  if (row.available && !steps.empty()) row.most_exposed_step = mostExposedStep(row, steps, comm, compute, span.start_ns);
  row.steps = stretchesOf(row.steps, OverlapRow::kMaxStepPoints);
  return row;
}


// Program order: the order the rank issued its ops, which repeats from step to step. Ops
// issued at one instant (a group's sends and receives) in op-index order, whatever order
// the source gave them in.
void toProgramOrder(std::vector<RankOp>& ops) {
  std::sort(ops.begin(), ops.end(), [](const RankOp& a, const RankOp& b) {
    return std::tie(a.issue_ns, a.op_index, a.side, a.key) < std::tie(b.issue_ns, b.op_index, b.side, b.key);
  });
}

// each(p, ops) for every process, ops in program order, on up to `threads` threads: each
// call gets a process of its own, and the ops vector is freed before the next.
template <class PerProcess>
void forEachProcessInProgramOrder(const RunModel& run, const ProcessOpSource& source, unsigned threads, PerProcess&& each) {
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t p; (p = next.fetch_add(1)) < run.processes.size();) {
      std::vector<RankOp> ops;
      source(p, ops);
      toProgramOrder(ops);
      each(p, ops);
    }
  };
  std::vector<std::jthread> helpers;
  for (unsigned t = 1; t < std::min<size_t>(threads, run.processes.size()); ++t) helpers.emplace_back(work);
  work();
}

}  // namespace

bool StepRule::matches(std::string_view name) const {
  return name == range_ || std::regex_match(name.begin(), name.end(), pattern_);
}

ProcessOpSource opsFromModel(const RunModel& run) {
  auto refs = std::make_shared<const std::vector<std::vector<ProcessOp>>>(opsByProcess(run));
  auto keys = std::make_shared<const OpKeys>(run);
  return [&run, refs, keys](size_t p, std::vector<RankOp>& ops) {
    ops.reserve((*refs)[p].size());
    for (const ProcessOp& ref : (*refs)[p]) ops.push_back(rankOp(run, ref, *keys));
  };
}

ProcessOpSource opsFromFiles(const RunModel& run) {
  return [&run](size_t p, std::vector<RankOp>& ops) {
    std::map<std::tuple<uint64_t, uint32_t, uint64_t, OpSide>, uint32_t> keys;  // dense, within the file
    std::string error;  // the loader has said what it could not read
    readOwnOps(run.processes[p].path, [&](const OwnOp& op) {
      const uint32_t key = keys.try_emplace({op.comm_id, op.func, op.bytes, op.side}, static_cast<uint32_t>(keys.size())).first->second;
      ops.push_back(rankOp(op.cpu_start_ns, op.gpu_start_ns, op.gpu_end_ns, op.op_index, key, op.side));
    }, error);
  };
}

std::vector<OverlapRow> computeOverlap(const RunModel& run, const StepRule& rule, const ProcessOpSource& source,
                                       unsigned threads) {
  std::vector<OverlapRow> rows(run.processes.size());
  forEachProcessInProgramOrder(run, source, threads,
                               [&](size_t p, const std::vector<RankOp>& ops) { rows[p] = overlapOfProcess(run, p, ops, rule); });
  return rows;
}

std::vector<OverlapRow> computeOverlap(const RunModel& run, const StepRule& rule) {
  return computeOverlap(run, rule, opsFromModel(run));
}

std::vector<std::vector<StepWindow>> stepWindows(const RunModel& run, const StepRule& rule) {
  std::vector<std::vector<StepWindow>> out(run.processes.size());
  forEachProcessInProgramOrder(run, opsFromModel(run), 1, [&](size_t p, const std::vector<RankOp>& ops) {
    std::string source;
    out[p] = stepsOf(run, p, ops, rule, source);
  });
  return out;
}

}  // namespace commtrace::report
