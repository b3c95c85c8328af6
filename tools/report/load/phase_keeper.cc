#include "tools/report/load/phase_keeper.h"

#include <algorithm>
#include <cctype>
#include <iterator>

#include "core/fold_digits.h"
#include "core/nccl_vocab.h"

namespace commtrace::report {

std::string foldDigits(std::string_view name) {
  std::string key(name.size(), '\0');
  key.resize(foldDigitRuns(name, key.data()));
  return key;
}

bool isProfilerStep(std::string_view name) {
  constexpr std::string_view kPrefix = "ProfilerStep#";
  if (!name.starts_with(kPrefix) || name.size() == kPrefix.size()) return false;
  return std::all_of(name.begin() + static_cast<std::ptrdiff_t>(kPrefix.size()), name.end(),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; });
}

namespace {

// The most frequent folded name at the shallowest depth where one repeats; "" when none does.
std::pair<uint16_t, std::string> repeatingRange(const std::vector<PhaseSpan>& phases, const NamePool& names) {
  std::map<std::pair<uint16_t, std::string>, size_t> occurrences;  // (depth, folded name)
  for (const PhaseSpan& ph : phases) ++occurrences[{ph.depth, foldDigits(names[ph.name])}];
  std::pair<uint16_t, std::string> best;
  size_t best_count = 1;
  for (const auto& [key, count] : occurrences) {
    if (best_count > 1 && key.first > best.first) break;  // ordered by depth: a shallower repeating range wins
    if (count > best_count) best = key, best_count = count;
  }
  return best;
}

}  // namespace

std::vector<PhaseSpan> stepRanges(const std::vector<PhaseSpan>& phases, const NamePool& names,
                                  const std::function<bool(std::string_view)>& step_range) {
  std::function<bool(const PhaseSpan&)> isStep;
  const bool profiler_steps = std::any_of(phases.begin(), phases.end(), [&](const PhaseSpan& ph) { return isProfilerStep(names[ph.name]); });
  if (step_range) {
    isStep = [&](const PhaseSpan& ph) { return step_range(names[ph.name]); };
  } else if (profiler_steps) {
    isStep = [&](const PhaseSpan& ph) { return isProfilerStep(names[ph.name]); };
  } else {
    const auto [depth, folded] = repeatingRange(phases, names);
    if (folded.empty()) return {};
    isStep = [&, depth = depth, folded = folded](const PhaseSpan& ph) { return ph.depth == depth && foldDigits(names[ph.name]) == folded; };
  }
  std::vector<PhaseSpan> steps;
  std::copy_if(phases.begin(), phases.end(), std::back_inserter(steps), isStep);
  std::sort(steps.begin(), steps.end(), [](const PhaseSpan& a, const PhaseSpan& b) { return a.cpu_start_ns < b.cpu_start_ns; });
  return steps;
}

void PhaseKeeper::add(const PhaseSpan& span, std::string_view name, std::string_view domain) {
  if (!keep_all_ && domain == nccl::kNvtxDomain) return;
  const bool named = keep_all_ || isProfilerStep(name) || (step_range_ && step_range_(name));
  if (!keep_all_ && ++seen_[{span.depth, foldDigits(name)}] == 2 && span.depth < repeat_depth_) {
    repeat_depth_ = span.depth;
    std::erase_if(kept_, [&](const Kept& k) { return !k.named && k.span.depth > repeat_depth_; });
  }
  if (named || span.depth <= repeat_depth_) kept_.push_back({span, named});
}

std::vector<PhaseSpan> PhaseKeeper::take() {
  std::vector<PhaseSpan> spans;
  spans.reserve(kept_.size());
  for (const Kept& k : kept_) spans.push_back(k.span);
  std::vector<Kept>().swap(kept_);
  std::sort(spans.begin(), spans.end(), [](const PhaseSpan& a, const PhaseSpan& b) { return a.cpu_start_ns < b.cpu_start_ns; });
  return spans;
}

}  // namespace commtrace::report
