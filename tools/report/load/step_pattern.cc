#include "tools/report/load/step_pattern.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "tools/report/load/own_ops.h"
#include "tools/report/load/phase_keeper.h"
#include "tools/report/load/reorder_buffer.h"

namespace commtrace::report {
namespace {

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

// Ops in program order, kStepPrefixOps first to infer the period from, then each released
// from a ReorderBuffer of kProgramReorderOps; notes where the asked-for steps begin.
class StepFinder {
 public:
  StepFinder(const std::vector<uint64_t>& steps, StepStarts& out) : asked_(steps), out_(out) {
    out_.begin_cpu_ns.assign(steps.size(), 0);
  }

  void add(const RankOp& op) {
    if (!prefix_done_) {
      prefix_.push_back(op);
      if (prefix_.size() == kStepPrefixOps) endPrefix();
      return;
    }
    program_order_.push(op);
    if (program_order_.size() > kProgramReorderOps) release();
  }

  void finish() {
    if (!prefix_done_) endPrefix();
    while (!program_order_.empty()) release();
    out_.period = steps_.period;
    out_.steps = steps_.period == 0 || released_ <= steps_.first ? 0 : (released_ - steps_.first + steps_.period - 1) / steps_.period;
  }

 private:
  void endPrefix() {
    prefix_done_ = true;
    steps_ = stepPeriodOf(prefix_);
    for (const RankOp& op : prefix_) program_order_.push(op);
    std::vector<RankOp>().swap(prefix_);
    while (program_order_.size() > kProgramReorderOps) release();
  }

  void release() {
    const RankOp op = program_order_.popEarliest();
    const uint64_t position = released_++, before_ns = previous_cpu_ns_;
    previous_cpu_ns_ = op.issue_ns;
    if (!steps_.beginsStep(position)) return;
    const uint64_t step = (position - steps_.first) / steps_.period;
    for (size_t i = 0; i < asked_.size(); ++i)
      if (asked_[i] == step && position > 0) out_.begin_cpu_ns[i] = before_ns + (op.issue_ns - before_ns) / 2;
  }

  const std::vector<uint64_t>& asked_;
  StepStarts& out_;
  bool prefix_done_ = false;
  std::vector<RankOp> prefix_;
  ReorderBuffer<RankOp, decltype(&laterInProgram)> program_order_{laterInProgram};
  uint64_t released_ = 0, previous_cpu_ns_ = 0;
  StepPeriod steps_;
};

}  // namespace

bool laterInProgram(const RankOp& a, const RankOp& b) {
  return std::tie(a.issue_ns, a.op_index, a.side, a.key) > std::tie(b.issue_ns, b.op_index, b.side, b.key);
}

namespace {

// A file's ops come in runs already in program order (each ring's, flushed in turn): the runs
// are merged pairwise, n log(runs) where a sort is n log(n) (a thousand files' prefixes of
// tens of thousands of ops each).
void sortIntoProgramOrder(std::vector<RankOp>& ops) {
  const auto earlier = [](const RankOp& a, const RankOp& b) { return laterInProgram(b, a); };
  std::vector<size_t> bounds{0};
  for (size_t i = 1; i < ops.size(); ++i)
    if (earlier(ops[i], ops[i - 1])) bounds.push_back(i);
  bounds.push_back(ops.size());
  const auto at = [&](size_t i) { return ops.begin() + static_cast<std::ptrdiff_t>(i); };
  while (bounds.size() > 2) {
    std::vector<size_t> merged{0};
    for (size_t k = 0; k + 1 < bounds.size(); k += 2) {
      const size_t end = bounds[std::min(k + 2, bounds.size() - 1)];
      std::inplace_merge(at(bounds[k]), at(bounds[k + 1]), at(end), earlier);
      merged.push_back(end);
    }
    bounds = std::move(merged);
  }
}

}  // namespace

StepPeriod stepPeriodOf(std::vector<RankOp>& prefix) {
  sortIntoProgramOrder(prefix);
  std::vector<uint32_t> keys(prefix.size());
  std::transform(prefix.begin(), prefix.end(), keys.begin(), [](const RankOp& op) { return op.key; });
  const std::vector<size_t> starts = inferredStepStarts(keys);
  return starts.size() >= 2 ? StepPeriod{starts[0], starts[1] - starts[0]} : StepPeriod{};
}

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

bool findStepStarts(const std::string& path, const std::vector<uint64_t>& steps, const std::function<bool(std::string_view)>& step_range,
                    StepStarts& out, std::string& error) {
  out = StepStarts{};
  StepFinder finder(steps, out);
  std::map<std::tuple<uint64_t, uint32_t, uint64_t, OpSide>, uint32_t> keys;  // as overlap keys ops: dense, within the file
  NamePool names;
  PhaseKeeper phases(false, step_range);
  const bool read = readOwnRecords(
      path,
      {.op =
           [&](const OwnOp& op) {
             if (op.cpu_start_ns == 0) out.cpu_times = false;
             const uint32_t key = keys.try_emplace({op.comm_id, op.func, op.bytes, op.side}, static_cast<uint32_t>(keys.size())).first->second;
             finder.add({.issue_ns = op.cpu_start_ns, .op_index = op.op_index, .key = key, .side = static_cast<uint8_t>(op.side)});
           },
       .phase =
           [&](PhaseSpan span, std::string_view name, std::string_view domain) {
             span.name = names.intern(name);
             phases.add(span, name, domain);
           },
       .compute = {}},
      error);
  finder.finish();
  const std::vector<PhaseSpan> ranges = stepRanges(phases.take(), names, step_range);
  if (ranges.empty()) return read;
  out.steps = ranges.size();
  out.period = 0;
  out.step_range = std::string(names[ranges.front().name]);
  out.cpu_times = true;  // NVTX ranges carry their own CPU times
  for (size_t i = 0; i < steps.size(); ++i) out.begin_cpu_ns[i] = steps[i] < ranges.size() ? ranges[steps[i]].cpu_start_ns : 0;
  return read;
}

}  // namespace commtrace::report
