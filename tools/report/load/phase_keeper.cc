#include "tools/report/load/phase_keeper.h"

#include <algorithm>
#include <cctype>

namespace commtrace::report {

std::string foldDigits(std::string_view name) {
  std::string key;
  for (char ch : name) {
    const bool digit = std::isdigit(static_cast<unsigned char>(ch)) != 0;
    if (!digit) key += ch;
    else if (key.empty() || key.back() != '#') key += '#';
  }
  return key;
}

bool isProfilerStep(std::string_view name) {
  constexpr std::string_view kPrefix = "ProfilerStep#";
  if (!name.starts_with(kPrefix) || name.size() == kPrefix.size()) return false;
  return std::all_of(name.begin() + static_cast<std::ptrdiff_t>(kPrefix.size()), name.end(),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; });
}

void PhaseKeeper::add(const PhaseSpan& span, std::string_view name) {
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
